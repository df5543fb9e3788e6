// Structured JSON logs on stderr, one object per line.
export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(
  level: Level = 'info',
  base: Record<string, unknown> = {},
  write = (line: string) => process.stderr.write(line + '\n'),
): Logger {
  const emit = (l: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[l] < ORDER[level]) return;
    write(JSON.stringify({ ts: new Date().toISOString(), level: l, msg, ...base, ...fields }));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  };
}

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
