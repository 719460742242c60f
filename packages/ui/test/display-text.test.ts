// Goal: every Unicode bidi control in event or operator text is shown as a visible mark, and nothing else changes.
import { describe, expect, it } from 'vitest';
import { hasBidiControls, revealBidi } from '../src/display-text.js';

const CONTROLS: [string, string][] = [
  ['\u202A', '⟨U+202A⟩'],
  ['\u202B', '⟨U+202B⟩'],
  ['\u202C', '⟨U+202C⟩'],
  ['\u202D', '⟨U+202D⟩'],
  ['\u202E', '⟨U+202E⟩'],
  ['\u2066', '⟨U+2066⟩'],
  ['\u2067', '⟨U+2067⟩'],
  ['\u2068', '⟨U+2068⟩'],
  ['\u2069', '⟨U+2069⟩'],
  ['\u200E', '⟨U+200E⟩'],
  ['\u200F', '⟨U+200F⟩'],
  ['\u061C', '⟨U+061C⟩'],
];

describe('revealBidi', () => {
  it('shows each bidi control as a visible mark', () => {
    for (const [control, mark] of CONTROLS) expect(revealBidi(`a${control}b`)).toBe(`a${mark}b`);
    expect(revealBidi('hive.sales.\u202Esredro')).toBe('hive.sales.⟨U+202E⟩sredro');
    expect(revealBidi(CONTROLS.map(([c]) => c).join(''))).toBe(CONTROLS.map(([, m]) => m).join(''));
  });

  it('leaves other text as it is, right-to-left scripts and other invisible characters included', () => {
    for (const text of ['', 'plain', 'שלום עולם', 'مرحبا', 'a\u200Bb', 'a\u200Db', 'x\u2065y', '<img src=x>', 'tab\there']) {
      expect(revealBidi(text)).toBe(text);
      expect(hasBidiControls(text)).toBe(false);
    }
  });

  it('hasBidiControls says whether there is one (called again and again, no regex state left over)', () => {
    for (let i = 0; i < 3; i++) expect(hasBidiControls('x\u202Ey')).toBe(true);
    expect(hasBidiControls('xy')).toBe(false);
  });
});
