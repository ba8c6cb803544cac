import { helpText, parseOptions } from '../../../src/cli/shared/options';
import { UsageError } from '../../../src/cli/shared/usage-error';

const OPTIONS = {
  port: { short: 'p', type: 'number', help: 'TCP port', default: 18515 },
  gid: { short: 'g', type: 'number', help: 'GID index' },
  dev: { short: 'd', type: 'string', help: 'device' },
  mode: { type: 'string', help: 'mode', default: 'poll' },
  events: { short: 'e', type: 'boolean', help: 'sleep on events' },
} as const;

function usageError(argv: string[]): UsageError {
  try {
    parseOptions(argv, OPTIONS);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error(`no error for ${argv.join(' ')}`);
}

describe('parseOptions', () => {
  it('fills in defaults, leaves options without one undefined and flags false', () => {
    const { values, positionals } = parseOptions([], OPTIONS);
    expect(values).toEqual({ port: 18515, gid: undefined, dev: undefined, mode: 'poll', events: false });
    expect(positionals).toEqual([]);
  });

  it('reads long, short and inline forms, numbers as numbers, and positionals in order', () => {
    const { values, positionals } = parseOptions(['host', '-p', '7000', '--gid=3', '-d', 'rxe0', '-e', 'x'], OPTIONS);
    expect(values).toEqual({ port: 7000, gid: 3, dev: 'rxe0', mode: 'poll', events: true });
    expect(positionals).toEqual(['host', 'x']);
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
    for (const argv of [['--port', '-1'], ['--frob'], ['--dev']]) expect(usageError(argv).message).not.toMatch(/\n/);
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
