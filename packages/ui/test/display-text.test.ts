// Goal: every character that shows nothing (bidi controls, zero-width and other format characters, separators, default-ignorables) in event or operator text is shown as a visible mark, and nothing else changes.
import { describe, expect, it } from 'vitest';
import { hasBidiControls, hasHiddenCharacters, mixedScripts, revealHidden } from '../src/display-text.js';

const BIDI_CONTROLS = ['202A', '202B', '202C', '202D', '202E', '2066', '2067', '2068', '2069', '200E', '200F', '061C'];
/** Zero-width space, joiners, word joiner, BOM, soft hyphen, CGJ, line and paragraph separators, a variation selector, Hangul filler, an unassigned default-ignorable, Mongolian vowel separator, NEL, DEL. */
const INVISIBLE = ['200B', '200C', '200D', '2060', 'FEFF', '00AD', '034F', '2028', '2029', 'FE0F', '3164', '2065', '180E', '0085', '007F'];
/** Tag characters: astral, each one code point of two UTF-16 units. */
const TAGS = ['E0001', 'E0041', 'E007F'];

const char = (hex: string) => String.fromCodePoint(parseInt(hex, 16));

describe('revealHidden', () => {
  it('shows each bidi control as a visible mark', () => {
    for (const hex of BIDI_CONTROLS) expect(revealHidden(`a${char(hex)}b`)).toBe(`a⟨U+${hex}⟩b`);
    expect(revealHidden('hive.sales.\u202Esredro')).toBe('hive.sales.⟨U+202E⟩sredro');
    expect(revealHidden(BIDI_CONTROLS.map(char).join(''))).toBe(BIDI_CONTROLS.map((h) => `⟨U+${h}⟩`).join(''));
  });

  it('shows every other invisible character as a visible mark, astral ones by their code point', () => {
    for (const hex of [...INVISIBLE, ...TAGS]) {
      expect(revealHidden(`a${char(hex)}b`)).toBe(`a⟨U+${hex}⟩b`);
      expect(hasHiddenCharacters(char(hex))).toBe(true);
    }
    // Two values that render alike in a cell no longer do.
    expect(revealHidden('hive.sales.orders')).not.toBe(revealHidden('hive.sales.or\u200Bders'));
    expect(revealHidden('ana\u{E0041}\u{E0042}')).toBe('ana⟨U+E0041⟩⟨U+E0042⟩');
  });

  it('leaves other text as it is: right-to-left scripts, white space, emoji, markup', () => {
    for (const text of ['', 'plain', 'שלום עולם', 'مرحبا', '<img src=x>', 'tab\there', 'two\nlines\r\n', 'a b', '日本語のテーブル', '🙂']) {
      expect(revealHidden(text)).toBe(text);
      expect(hasHiddenCharacters(text)).toBe(false);
    }
  });

  it('says whether a value holds any (called again and again, no regex state left over), and whether a bidi control', () => {
    for (let i = 0; i < 3; i++) {
      expect(hasHiddenCharacters('x\u202Ey')).toBe(true);
      expect(hasHiddenCharacters('x\u200By')).toBe(true);
    }
    expect(hasHiddenCharacters('xy')).toBe(false);
    expect(hasBidiControls('x\u202Ey')).toBe(true);
    expect(hasBidiControls('x\u200By')).toBe(false);
  });
});

describe('mixedScripts', () => {
  it('names the look-alike scripts one word mixes', () => {
    expect(mixedScripts('hive.s\u0430les.orders')).toEqual(['Latin', 'Cyrillic']);
    expect(mixedScripts('\u03BFrders')).toEqual(['Latin', 'Greek']);
  });

  it('says nothing of words each in one script, side by side or not', () => {
    for (const text of ['hive.sales.orders', 'отчёт', 'orders отчёт', 'αβγ', '日本語のテーブル', '']) expect(mixedScripts(text)).toEqual([]);
  });
});
