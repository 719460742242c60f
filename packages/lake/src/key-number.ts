/** Zero-padded decimal, so object keys sort in numeric order (and humans can read them). */
export function encodeKeyNumber(n: number): string {
  return String(n).padStart(16, '0');
}
