/**
 * A small command-line parser: `--name value`, `--name=value`, `--flag`,
 * short aliases, and positionals. Unknown options are errors, so a typo is
 * a one-line message rather than a silently ignored setting.
 */
export interface OptionSpec {
  /** Long name without dashes. */
  name: string;
  /** One-letter alias. */
  short?: string;
  /** `'flag'` takes no value. */
  type: 'string' | 'number' | 'flag';
  /** Shown in --help. */
  help: string;
  default?: string | number | boolean;
}

/** What {@link parseArgs} returns. */
export interface Parsed {
  options: Record<string, string | number | boolean | undefined>;
  positionals: string[];
}

/** An error in the command line (exit status 2, one-line message). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Parses `argv` against `specs`. */
export function parseArgs(argv: readonly string[], specs: readonly OptionSpec[]): Parsed {
  const options: Parsed['options'] = {};
  for (const s of specs) options[s.name] = s.default;
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const [rawName, inline] = arg.startsWith('--') ? splitOnce(arg.slice(2)) : [arg.slice(1), undefined];
    const spec = specs.find((s) => (arg.startsWith('--') ? s.name === rawName : s.short === rawName));
    if (!spec) throw new UsageError(`unknown option ${arg}`);
    if (spec.type === 'flag') {
      if (inline !== undefined) throw new UsageError(`option --${spec.name} takes no value`);
      options[spec.name] = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`option --${spec.name} needs a value`);
    if (spec.type === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n) || value.trim() === '') throw new UsageError(`option --${spec.name} needs a number, got '${value}'`);
      options[spec.name] = n;
    } else {
      options[spec.name] = value;
    }
  }
  return { options, positionals };
}

/** Formats the options for --help. */
export function helpText(usage: string, summary: string, specs: readonly OptionSpec[]): string {
  const lines = specs.map((s) => {
    const names = `${s.short ? `-${s.short}, ` : '    '}--${s.name}${s.type === 'flag' ? '' : ` <${s.type}>`}`;
    const dflt = s.default !== undefined && s.type !== 'flag' ? ` (default ${s.default})` : '';
    return `  ${names.padEnd(28)} ${s.help}${dflt}`;
  });
  return `Usage: ${usage}\n\n${summary}\n\nOptions:\n${lines.join('\n')}\n`;
}

function splitOnce(s: string): [string, string | undefined] {
  const at = s.indexOf('=');
  return at < 0 ? [s, undefined] : [s.slice(0, at), s.slice(at + 1)];
}
