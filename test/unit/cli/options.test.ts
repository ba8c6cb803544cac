import { helpText, parseOptions, type Operands } from '../../../src/cli/shared/options';
import { closest } from '../../../src/cli/shared/suggest';
import { UsageError } from '../../../src/cli/shared/usage-error';

const OPTIONS = {
  port: { short: 'p', type: 'number', help: 'TCP port', default: 18515 },
  gid: { short: 'g', type: 'number', help: 'GID index' },
  dev: { short: 'd', type: 'string', help: 'device' },
  mode: { type: 'string', help: 'mode', default: 'poll' },
  events: { short: 'e', type: 'boolean', help: 'sleep on events' },
  srq: { type: 'boolean', help: 'shared receive queue mode' },
  loopback: { type: 'boolean', help: 'both ends here' },
  'num-qp': { short: 'q', type: 'number', help: 'QPs', default: 16, with: ['srq'] },
  clients: { type: 'number', help: 'clients', default: 1, with: ['srq', 'loopback'] },
} as const;

const NO_MODES = { port: 18515, gid: undefined, dev: undefined, mode: 'poll', events: false, srq: false, loopback: false, 'num-qp': 16, clients: 1 };

function usageError(argv: string[], operands?: Operands): UsageError {
  try {
    parseOptions(argv, OPTIONS, operands);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error(`no error for ${argv.join(' ')}`);
}

describe('parseOptions', () => {
  it('fills in defaults, leaves options without one undefined and flags false', () => {
    const { values, positionals } = parseOptions([], OPTIONS);
    expect(values).toEqual(NO_MODES);
    expect(positionals).toEqual([]);
  });

  it('reads long, short and inline forms, numbers as numbers, and the operands the command takes, in order', () => {
    const { values, positionals } = parseOptions(['host', '-p', '7000', '--gid=3', '-d', 'rxe0', '-e', 'x'], OPTIONS, { operands: ['host', 'what'] });
    expect(values).toEqual({ ...NO_MODES, port: 7000, gid: 3, dev: 'rxe0', events: true });
    expect(positionals).toEqual(['host', 'x']);
  });

  it('refuses an argument the command does not take, naming it (demo 100)', () => {
    expect(usageError(['100']).message).toBe("unexpected argument '100' (this command takes options only)");
    expect(usageError(['-e', 'a', 'b'], { operands: ['server-host'] }).message).toBe("unexpected argument 'b' (this command takes one: server-host)");
    expect(parseOptions(['a'], OPTIONS, { operands: ['server-host'] }).positionals).toEqual(['a']);
  });

  it("words an unknown option itself, one line, suggesting the nearest, without parseArgs' hint about --", () => {
    expect(usageError(['--evnts']).message).toBe("unknown option '--evnts' (did you mean --events?)");
    expect(usageError(['--de']).message).toBe("unknown option '--de' (did you mean --dev?)");
    expect(usageError(['--frobnicate']).message).toBe("unknown option '--frobnicate'");
    expect(usageError(['-Z']).message).toBe("unknown option '-Z'");
    for (const argv of [['--evnts'], ['-Z'], ['--dev', '--events']]) expect(usageError(argv).message).not.toMatch(/--"|as in|positional/);
  });

  it('a missing value, the next option taken for one, and a value on a flag are usage errors; a negative number is a value', () => {
    expect(usageError(['--dev']).message).toBe('option -d/--dev needs a value');
    expect(usageError(['--dev', '--events']).message).toBe('option -d/--dev needs a value');
    expect(parseOptions(['--dev=--events'], OPTIONS).values.dev).toBe('--events');
    expect(usageError(['-e=1']).message).toMatch(/unknown option/);
    expect(usageError(['--events=1']).message).toBe('option -e/--events takes no value');
    expect(parseOptions(['-p', '-1'], OPTIONS).values.port).toBe(-1);
  });

  it("an option of another mode is a usage error (pingpong -q without --srq), given in any order", () => {
    expect(usageError(['-q', '4']).message).toBe('-q/--num-qp goes with --srq');
    expect(usageError(['--clients', '2']).message).toBe('--clients goes with --srq or --loopback');
    expect(parseOptions(['-q', '4', '--srq'], OPTIONS).values['num-qp']).toBe(4);
    expect(parseOptions(['--loopback', '--clients', '3'], OPTIONS).values.clients).toBe(3);
    // Its default alone is not "given": the mode's absence is fine.
    expect(parseOptions([], OPTIONS).values['num-qp']).toBe(16);
  });

  it('types each value from its definition', () => {
    const { values } = parseOptions([], OPTIONS);
    const port: number = values.port;
    const gid: number | undefined = values.gid;
    const mode: string = values.mode;
    const events: boolean = values.events;
    expect([port, gid, mode, events]).toEqual([18515, undefined, 'poll', false]);
  });

  it('rejects what is not a number, unknown options, missing values and values on flags, each in one line', () => {
    expect(usageError(['--port', 'lots']).message).toBe("option --port needs a number, got 'lots'");
    expect(usageError(['--port', ' ']).message).toMatch(/needs a number/);
    expect(usageError(['--frob']).message).toMatch(/--frob/);
    expect(usageError(['--dev']).message).toMatch(/--dev/);
    expect(usageError(['--events=1']).message).toMatch(/--events/);
    for (const argv of [['--port', 'x'], ['--frob'], ['--dev']]) expect(usageError(argv).message).not.toMatch(/\n/);
  });
});

describe('closest', () => {
  it('suggests a near typo or the one name a prefix begins, never a guess', () => {
    expect(closest('jsn', ['json', 'device'])).toBe('json');
    expect(closest('dev', ['device', 'json'])).toBe('device');
    expect(closest('d', ['device', 'debug'])).toBeUndefined();
    expect(closest('de', ['device', 'debug'])).toBeUndefined();
    expect(closest('xyz', ['json', 'device'])).toBeUndefined();
  });
});

describe('helpText', () => {
  it('lists every option with its alias, value type and default', () => {
    const text = helpText('rx-verbs x [options]', 'Does x.', OPTIONS);
    expect(text.startsWith('Usage: rx-verbs x [options]\n\nDoes x.\n\nOptions:\n')).toBe(true);
    expect(text).toMatch(/-p, --port <number> +TCP port \(default 18515\)/);
    expect(text).toMatch(/ {6}--mode <string> +mode \(default poll\)/);
    expect(text).toMatch(/-e, --events +sleep on events\n/);
  });
});
