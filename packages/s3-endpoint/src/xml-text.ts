const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
const DECODED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Escapes text for an XML element or attribute value. */
export function xmlText(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/**
 * Decodes the text of an XML element: the five predefined entities and numeric character
 * references. Undefined when the text holds a bare `&`, an unknown entity or `<`.
 */
export function xmlDecode(text: string): string | undefined {
  if (text.includes('<') || /&(?!(?:#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|amp|lt|gt|quot|apos);)/.test(text)) return undefined;
  let bad = false;
  const decoded = text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (_whole, ref: string) => {
    if (!ref.startsWith('#')) return DECODED[ref] ?? '';
    const code = ref.startsWith('#x') ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    if (code > 0x10ffff) {
      bad = true;
      return '';
    }
    return String.fromCodePoint(code);
  });
  return bad ? undefined : decoded;
}
