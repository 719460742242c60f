// Goal: what is stored is what was sent: a string is accepted only if it is well-formed Unicode, and a body only if it is well-formed UTF-8 (property tests over random strings and bytes).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditError } from '../src/audit-error.js';
import { validateIngestBody } from '../src/event-validation.js';
import { invalidUtf8Offset } from '../src/utf8-bytes.js';

const SEED = Number(process.env['FC_SEED'] ?? Date.now() % 1_000_000);
const NOW_MS = 1_792_288_263_000;

/** Random UTF-16 strings, lone surrogates included (fast-check's binary units are any code point, halves too). */
const anyString = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.array(fc.integer({ min: 0xd7f0, max: 0xe010 }), { maxLength: 6 }).map((units) => String.fromCharCode(...units)));

describe('the Unicode rule (property tests)', () => {
  it(`accepts an eventId or userId exactly when it is well-formed, and keeps it unchanged through UTF-8 (seed ${SEED})`, () => {
    fc.assert(
      fc.property(anyString, fc.constantFrom('eventId', 'userId', 'details'), (text, field) => {
        const raw = { source: 'trino', userId: 'u', action: 'data:Select', [field]: field === 'userId' ? `u${text}` : text };
        const value = raw[field] as string;
        let accepted: boolean;
        try {
          const [stored] = validateIngestBody(raw, { nowMs: NOW_MS });
          accepted = true;
          // What is stored survives UTF-8 encoding as it came: no U+FFFD stands in for anything.
          const kept = (stored as unknown as Record<string, string>)[field]!;
          expect(Buffer.from(kept, 'utf8').toString('utf8')).toBe(kept);
          if (value !== '') expect(kept).toBe(value);
        } catch (err) {
          if (!(err instanceof AuditError)) throw err;
          if (value === '' && field === 'eventId') return; // empty ids are refused for another reason
          expect(err.message).toMatch(new RegExp(`^event\\.${field} is not well-formed Unicode: a lone surrogate \\(U\\+D[89A-F][0-9A-F]{2}\\) at character \\d+$`));
          accepted = false;
        }
        expect(accepted).toBe(value.isWellFormed());
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it(`finds invalid UTF-8 exactly where the WHATWG decoder does (seed ${SEED})`, () => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), fc.string({ unit: 'binary', maxLength: 8 }), (noise, text) => {
        const bytes = new Uint8Array([...Buffer.from(text.toWellFormed(), 'utf8'), ...noise]);
        const offset = invalidUtf8Offset(bytes);
        let valid = true;
        try {
          decoder.decode(bytes);
        } catch {
          valid = false;
        }
        expect(offset === -1).toBe(valid);
        if (offset !== -1) {
          // Everything before the offset decodes; the offset starts a sequence that does not.
          expect(() => decoder.decode(bytes.subarray(0, offset))).not.toThrow();
          expect(() => decoder.decode(bytes.subarray(offset))).toThrow();
        }
      }),
      { seed: SEED, numRuns: 3000 },
    );
  });
});
