// Host side of the rxe harness: boots one QEMU/TCG guest of the harness
// (the initramfs's /init chroots into the host root and runs a guest
// script), tees its console to a file, shows the compact part of it, and
// stops it when it runs past its time. Used by run.js.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const net = require('net');

// Console lines worth showing without --verbose: the guest's own log, the
// init's, jest's verdicts and totals, the interop table rows.
const COMPACT = /^(GUEST|INIT|PAIR|PASS|FAIL|  ●|Tests:|Test Suites:|    (server|client)\|)/;

/**
 * Boots a guest; resolves with { code, timedOut } once QEMU has exited.
 * opts: kernel, initrd, script (absolute path run in the guest), keep
 * (paths the guest must still see under its tmpfs mounts), out (the
 * writable results folder), smp, mem (MiB), timeoutS, console (file),
 * verbose, prefix (for console lines shown), net (extra QEMU arguments for a
 * network device; none: `-nic none`), cmdline (more kernel arguments),
 * signal (an AbortSignal that stops the guest).
 */
function bootGuest(opts) {
  const append = [
    // no_timer_check: on a busy host the emulated CPU can be too slow for the
    // kernel's IO-APIC timer check, which then panics at boot.
    'console=ttyS0 panic=-1 quiet loglevel=3 no_timer_check',
    `rxe_script=${opts.script}`,
    `rxe_keep=${opts.keep.join(':')}`,
    ...(opts.cmdline ?? []),
  ].join(' ');
  const args = [
    '-accel', 'tcg', '-cpu', 'max', '-smp', String(opts.smp), '-m', String(opts.mem), '-machine', 'q35',
    '-nographic', '-serial', 'stdio', '-monitor', 'none', '-no-reboot',
    ...(opts.net ?? ['-nic', 'none']),
    '-kernel', opts.kernel, '-initrd', opts.initrd, '-append', append,
    '-virtfs', 'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap',
    '-virtfs', `local,path=${opts.out},mount_tag=out,security_model=none,multidevs=remap`,
  ];
  const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'pipe', 'pipe'], signal: opts.signal });
  const consoleFile = fs.createWriteStream(opts.console);
  let pending = '';
  const onData = (chunk) => {
    const text = pending + chunk.toString('utf8').replace(/\r/g, '');
    const lines = text.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      consoleFile.write(`${line}\n`);
      if (opts.verbose || COMPACT.test(line)) process.stdout.write(`${opts.prefix ?? ''}${line}\n`);
    }
  };
  qemu.stdout.on('data', onData);
  qemu.stderr.on('data', onData);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    qemu.kill('SIGTERM');
    setTimeout(() => qemu.kill('SIGKILL'), 10_000).unref();
  }, opts.timeoutS * 1000);
  return new Promise((resolve) => {
    qemu.on('error', (err) => {
      consoleFile.write(`qemu: ${err.message}\n`);
    });
    qemu.on('close', (code, signal) => {
      clearTimeout(timer);
      if (pending) consoleFile.write(`${pending}\n`);
      consoleFile.end(() => resolve({ code: code ?? 128, signal, timedOut }));
    });
  });
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Waits (<= timeoutS) until something listens on 127.0.0.1:port, reading
 * /proc/net/tcp rather than connecting: QEMU's socket netdev takes the
 * first connection as its peer.
 */
async function waitListening(port, timeoutS) {
  const want = new RegExp(`^ *\\d+: 0100007F:${port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A `, 'm');
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    if (want.test(fs.readFileSync('/proc/net/tcp', 'utf8'))) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

module.exports = { bootGuest, freePort, waitListening };
