// Runs INSIDE a guest of the pair part: one host of a pair case, as
// pair.js (the driver, guest b) uses it directly and the agent (guest a)
// serves it to the driver. Its device (the test link's NIC, its address,
// rxe0 on it), the case commands it runs, whether a port listens.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const SELF = process.env.RXE_SELF;
const PEER = process.env.RXE_PEER;
const CTRL_SELF = process.env.RXE_CTRL_SELF;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));


/** Runs a shell command; resolves { rc, out } (rc 124 when it ran past timeoutS). */
function shell(cmd, env, timeoutS = 30) {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', cmd], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const timer = setTimeout(() => {
      out += `(killed: ran past ${timeoutS} s)\n`;
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutS * 1000);
    child.on('error', (e) => { out += `${e.message}\n`; });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ rc: signal ? 124 : code, out });
    });
  });
}

// --- one host: its device and the commands it runs ---------------------------
/** The guest's RoCE v2 GID of an IPv4 address: ::ffff:a.b.c.d. */
const gidOf = (ip) => {
  const [a, b, c, d] = ip.split('.').map(Number);
  const hex = (x, y) => ((x << 8) | y).toString(16).padStart(4, '0');
  return `0000:0000:0000:0000:0000:ffff:${hex(a, b)}:${hex(c, d)}`;
};

/** The network device with this MAC address (run.js gives each link's NIC its own). */
function nicWithMac(mac) {
  return fs.readdirSync('/sys/class/net').find((n) => {
    try { return fs.readFileSync(`/sys/class/net/${n}/address`, 'utf8').trim() === mac; } catch { return false; }
  });
}

class Host {
  constructor() {
    this.procs = new Map();
    this.nic = nicWithMac(process.env.RXE_MAC);
    this.ctrlNic = nicWithMac(process.env.RXE_CTRL_MAC);
    this.gid = '';
  }

  /** The control link: up once, never touched by the cases. */
  async setupControl() {
    if (!this.ctrlNic) throw new Error(`no network device with MAC ${process.env.RXE_CTRL_MAC} (the control link)`);
    const r = await shell(`ip link set lo up && ip addr replace ${CTRL_SELF}/24 dev ${this.ctrlNic} && ip link set ${this.ctrlNic} up`);
    if (r.rc !== 0) throw new Error(`control link set-up failed: ${r.out.trim()}`);
  }

  /**
   * Address, link up, rxe0 on the NIC, its GID of our address: also the
   * reset after a fault case. `fresh` makes rxe0 anew: once a host's link
   * had gone down and up (6.1 kernel), IP worked again but the peer's
   * connect requests got no answer at all, not even a reject; with a new
   * rxe0 they do.
   */
  async setupDevice(fresh = false) {
    if (!this.nic) throw new Error(`no network device with MAC ${process.env.RXE_MAC} (the test link)`);
    const again = fresh ? '{ [ ! -e /sys/class/infiniband/rxe0 ] || timeout 60 rdma link delete rxe0; } &&' : '';
    this.gid = '';
    const r = await shell(`ip addr replace ${SELF}/24 dev ${this.nic} && ip link set ${this.nic} up && ${again}
      { [ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev ${this.nic}; }`, {}, 90);
    if (r.rc !== 0) throw new Error(`device set-up failed: ${r.out.trim()}`);
    const dir = '/sys/class/infiniband/rxe0/ports/1/gids';
    const want = gidOf(SELF);
    for (let i = 0; i < 100; i++) {
      const found = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => {
        try { return fs.readFileSync(path.join(dir, f), 'utf8').trim() === want; } catch { return false; }
      }) : undefined;
      if (found !== undefined) {
        this.gid = found;
        break;
      }
      await sleep(200);
    }
    if (!this.gid) throw new Error(`rxe0 has no GID ${want} after 20 s`);
    // After a link came back up, rxe0's port follows the carrier a moment later.
    const state = '/sys/class/infiniband/rxe0/ports/1/state';
    for (let i = 0; i < 100; i++) {
      try { if (fs.readFileSync(state, 'utf8').includes('ACTIVE')) return { nic: this.nic, gid: this.gid }; } catch { /* being made */ }
      await sleep(200);
    }
    throw new Error(`rxe0's port is not ACTIVE after 20 s (${fs.existsSync(state) ? fs.readFileSync(state, 'utf8').trim() : 'no port'})`);
  }

  /**
   * Waits until the peer answers on the test link: ARP and ping first (a
   * neighbour entry that failed while a link was down is probed again),
   * then the CM: a connect to a port nobody listens on comes back REJECTED
   * (status 8) only when address, route and the peer's IB CM all work.
   */
  async reachPeer(port) {
    const r = await shell(`t0=$(date +%s); since() { echo "$(( $(date +%s) - t0 )) s"; }
      for i in $(seq 1 30); do busybox ping -c 1 -W 1 "$RXV_PEER" >/dev/null 2>&1 && break; sleep 0.5; done
      if ! busybox ping -c 1 -W 1 "$RXV_PEER" >/dev/null 2>&1; then
        echo "no ping reply from $RXV_PEER after $(since)"; ip -br link; ip -br addr; ip neigh; exit 1
      fi
      for i in $(seq 1 4); do
        out=$(timeout 20 rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C 1 2>&1)
        case "$out" in *"REJECTED, error 8"*) echo "rping answered after $(since)"; exit 0;; esac
        echo "rping try $i ($(since)): $out" | tr '\\n' ' '; echo
      done
      echo "no rdma_cm answer from $RXV_PEER"; ip neigh; cat /sys/class/infiniband/rxe0/ports/1/state; exit 1`, this.env(port), 110);
    if (r.rc !== 0) throw new Error(`the peer is not reachable again: ${r.out.trim()}`);
    return true;
  }

  env(port) {
    return { RXV_SELF: SELF, RXV_PEER: PEER, RXV_PORT: String(port), RXV_NIC: this.nic, RXV_GID: this.gid, RXV_DEV: 'rxe0' };
  }

  /** Starts a case's command in its own process group (so a kill takes all of it). */
  start(key, cmd, port) {
    const p = { out: '', done: false, rc: null };
    const child = spawn('bash', ['-c', cmd], { env: { ...process.env, ...this.env(port) }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    p.child = child;
    child.stdout.on('data', (b) => (p.out += b));
    child.stderr.on('data', (b) => (p.out += b));
    child.on('error', (e) => { p.out += `${e.message}\n`; });
    child.on('close', (code, signal) => {
      p.done = true;
      p.rc = signal ? 128 + (os.constants.signals[signal] ?? 0) : code;
    });
    this.procs.set(key, p);
    return true;
  }

  status(key) {
    const p = this.procs.get(key);
    return p ? { done: p.done, rc: p.rc, out: p.out } : { done: true, rc: 127, out: 'never started\n' };
  }

  kill(key, signal = 'SIGKILL') {
    const p = this.procs.get(key);
    if (p && !p.done) try { process.kill(-p.child.pid, signal); } catch { /* gone */ }
    return true;
  }

  /** Kills whatever a case left running. */
  async killAll() {
    for (const key of this.procs.keys()) this.kill(key);
    for (let i = 0; i < 50 && [...this.procs.values()].some((p) => !p.done); i++) await sleep(100);
    this.procs.clear();
    return true;
  }

  run(cmd, port, timeoutS) {
    return shell(cmd, this.env(port), timeoutS);
  }

  /** Whether something listens on the port: TCP (/proc/net/tcp*) or rdma_cm (rdma res show cm_id). */
  async listening(port) {
    const hex = port.toString(16).toUpperCase().padStart(4, '0');
    const tcp = new RegExp(`^ *\\d+: [0-9A-F]+:${hex} [0-9A-F]+:[0-9A-F]+ 0A `, 'm');
    for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
      try { if (tcp.test(fs.readFileSync(f, 'utf8'))) return true; } catch { /* no IPv6 */ }
    }
    const cm = await shell('rdma resource show cm_id');
    return new RegExp(`state LISTEN .*src-addr \\S+:${port}\\b`).test(cm.out);
  }
}

module.exports = { Host, sleep };
