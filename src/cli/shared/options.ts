/**
 * Typed command-line options over `node:util` `parseArgs`: each command
 * declares its options once (name, type, alias, help, default) and gets back
 * values of the right types, and `--help` text made from the same table.
 *
 * `parseArgs` knows strings and booleans only; numbers are read as strings
 * and converted here, so `--iters lots` is a usage error, not a `NaN`.
 */
import { parseArgs } from 'node:util';
import { UsageError } from './usage-error';

interface OptionBase {
  /** One-letter alias, without the dash. */
  readonly short?: string;
  /** One line for `--help`. */
  readonly help: string;
}

/** One option: a string or number taking a value, or a boolean flag. */
export type OptionDef =
  | (OptionBase & { readonly type: 'string'; readonly default?: string })
  | (OptionBase & { readonly type: 'number'; readonly default?: number })
  | (OptionBase & { readonly type: 'boolean' });

/** A command's options, by long name (without dashes). */
export type OptionDefs = Readonly<Record<string, OptionDef>>;

/** The value an option has after parsing: `undefined` only when it has no default. */
type ValueOf<D extends OptionDef> = D extends { type: 'boolean' }
  ? boolean
  : D extends { type: 'number' }
    ? D extends { default: number } ? number : number | undefined
    : D extends { default: string } ? string : string | undefined;

/** Every option's value, typed from its definition. */
export type OptionValues<Defs extends OptionDefs> = { -readonly [K in keyof Defs]: ValueOf<Defs[K]> };

/** What {@link parseOptions} returns. */
export interface ParsedOptions<Defs extends OptionDefs> {
  /** Every declared option, with its default where it was not given. */
  values: OptionValues<Defs>;
  /** The arguments that are not options, in order. */
  positionals: string[];
}

/**
 * Parses `argv` against `defs`. Unknown options, missing values and numbers
 * that are not numbers are {@link UsageError}s with a one-line message, so a
 * typo is never a silently ignored setting.
 */
export function parseOptions<Defs extends OptionDefs>(argv: readonly string[], defs: Defs): ParsedOptions<Defs> {
  const config: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, def] of Object.entries(defs)) {
    config[name] = { type: def.type === 'boolean' ? 'boolean' : 'string', ...(def.short ? { short: def.short } : {}) };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options: config, strict: true, allowPositionals: true });
  } catch (err) {
    // Node words some of these over several lines; the CLI reports one.
    if (isParseArgsError(err)) throw new UsageError(err.message.replace(/\s*\n\s*/g, ' '));
    throw err;
  }
  const values: Record<string, string | number | boolean | undefined> = {};
  for (const [name, def] of Object.entries(defs)) {
    const raw = parsed.values[name];
    if (def.type === 'boolean') values[name] = raw === true;
    else if (raw === undefined) values[name] = def.default;
    else values[name] = def.type === 'number' ? toNumber(name, String(raw)) : String(raw);
  }
  return { values: values as OptionValues<Defs>, positionals: parsed.positionals };
}

/** The `--help` text: usage line, summary, then one line per option with its default. */
export function helpText(usage: string, summary: string, defs: OptionDefs): string {
  const lines = Object.entries(defs).map(([name, def]) => {
    const names = `${def.short ? `-${def.short}, ` : '    '}--${name}${def.type === 'boolean' ? '' : ` <${def.type}>`}`;
    const dflt = def.type !== 'boolean' && def.default !== undefined ? ` (default ${def.default})` : '';
    return `  ${names.padEnd(28)} ${def.help}${dflt}`;
  });
  return `Usage: ${usage}\n\n${summary}\n\nOptions:\n${lines.join('\n')}\n`;
}

function toNumber(name: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new UsageError(`option --${name} needs a number, got '${text}'`);
  return n;
}

// By its code, not `instanceof`: Node's errors may come from another realm
// (a vm context, as under jest).
function isParseArgsError(err: unknown): err is { code: string; message: string } {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  return typeof e?.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS_') && typeof e.message === 'string';
}
