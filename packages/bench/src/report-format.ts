/** Number and table formatting shared by the report's sections. */
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const ms = (n: number) => (Math.abs(n) >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(1)} ms`);
export const sec = (n: number | undefined) => (n === undefined ? 'n/a' : `${(n / 1000).toFixed(2)} s`);
export const pct = (n: number) => `${(n * 100).toFixed(0)}%`;
export const metWord = (met: boolean) => (met ? 'yes' : '**no**');
export const cores = (n: number | undefined) => (n === undefined ? 'n/a' : n.toFixed(2));
export const loads = (l: number[]) => l.map((n) => n.toFixed(2)).join(' / ');

/** One row of a knobs table: the environment variable, the value this run used ('—' when the part did not run), the default. */
export const knobRow = (name: string, value: number | undefined, fallback: number): string[] => [name, value === undefined ? '—' : int(value), int(fallback)];

export function table(headers: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}
