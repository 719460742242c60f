// Goal: configured keys' values never survive masking in any syntax we promise, and text without such keys comes back byte for byte.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REDACT_KEYS, Redactor, redactKeyList, REDACTION_MASK } from '../src/redaction.js';

const defaults = new Redactor(DEFAULT_REDACT_KEYS);

function masked(text: string, redactor = defaults): { text: string; count: number } {
  return redactor.redact(text);
}

describe('Redactor: the promised syntaxes', () => {
  const cases: Array<[string, string, number]> = [
    ['password=hunter2', 'password=***', 1],
    ['jdbc:mysql://db/x?user=bob&password=hunter2&ssl=true', 'jdbc:mysql://db/x?user=bob&password=***&ssl=true', 1],
    ['{metalake=acme, s3.secret-key=abc123, http.method=GET}', '{metalake=acme, s3.secret-key=***, http.method=GET}', 1],
    ["CREATE CATALOG c WITH ('s3.access-key' = 'AKIA1', 's3.secret-key'='shh', 'region'='eu')", "CREATE CATALOG c WITH ('s3.access-key' = '***', 's3.secret-key'='***', 'region'='eu')", 2],
    ["CREATE TABLE t USING jdbc OPTIONS (url 'jdbc:x', password 'p''w', user 'bob')", "CREATE TABLE t USING jdbc OPTIONS (url 'jdbc:x', password '***', user 'bob')", 1],
    ["CREATE TABLE t USING jdbc OPTIONS (`fs.s3a.secret.key` \"k\")", 'CREATE TABLE t USING jdbc OPTIONS (`fs.s3a.secret.key` "***")', 1],
    ['{"user":"bob","Password": "a\\"b","nested":{"api_key":"xyz"}}', '{"user":"bob","Password": "***","nested":{"api_key":"***"}}', 2],
    ['{"token": 12345, "session_token": null, "secret": true}', '{"token": "***", "session_token": null, "secret": "***"}', 2],
    ['{"detail":"{\\"password\\":\\"pw1\\",\\"db\\":\\"x\\"}"}', '{"detail":"{\\"password\\":\\"***\\",\\"db\\":\\"x\\"}"}', 1],
    ['http.uri=/api/x?token=abc', 'http.uri=/api/x?token=***', 1],
    ["SET spark.hadoop.fs.s3a.secret.key = 'abc'", "SET spark.hadoop.fs.s3a.secret.key = '***'", 1],
    ['CALL system.login(user => \'bob\', password => \'pw\')', "CALL system.login(user => 'bob', password => '***')", 1],
    ['TOKEN=ABC; Token=def', 'TOKEN=***; Token=***', 2],
  ];
  for (const [input, expected, count] of cases) {
    it(`masks ${input}`, () => {
      expect(masked(input)).toEqual({ text: expected, count });
    });
  }

  it('masks a long list under a sensitive key value by value for its first 64, then the rest of it as one span, and goes on after it', () => {
    const values = Array.from({ length: 200 }, (_, i) => `v${i}`);
    const nested = `password=(${values.slice(0, 100).join(' ')}, ('x)y', [z1, z2]), ${values.slice(100).join(', ')}) AND user=bob AND token=t1`;
    const result = masked(nested);
    // 64 one by one, the rest in one, then the token after the list.
    expect(result.count).toBe(66);
    expect(result.text).toBe(`password=(${Array.from({ length: 64 }, () => REDACTION_MASK).join(' ')} ${REDACTION_MASK}) AND user=bob AND token=${REDACTION_MASK}`);
    // The same for a list that never closes: masked to the end of the text.
    expect(masked(`password=[${values.join(', ')}`).text).toBe(`password=[${Array.from({ length: 64 }, () => REDACTION_MASK).join(', ')}, ${REDACTION_MASK}`);
  });

  it('masks the first 256 values of one text one by one, then the rest of the text whole (from the next key on)', () => {
    const text = `${'token=x '.repeat(300)}tail`;
    const result = masked(text);
    expect(result.count).toBe(257);
    expect(result.text).toBe(`${`token=${REDACTION_MASK} `.repeat(256)}${REDACTION_MASK}`);
    // Masked again, nothing changes and nothing is counted.
    expect(masked(result.text)).toEqual({ text: result.text, count: 0 });
  });

  it('leaves a masked text alone when masked again (idempotent, nothing counted)', () => {
    for (const [, expected] of cases) expect(masked(expected)).toEqual({ text: expected, count: 0 });
  });

  it('leaves key names used as values, words in prose and other operators alone', () => {
    const texts = [
      'the password was changed by admin',
      "SELECT * FROM t WHERE kind = 'password' AND token_count > 5",
      '{"kind":"password","list":["secret","token"]}',
      'token >= 5 and secret != 3 and password == 4',
      'a token; a secret, a credential.',
      'password=',
      '"password": ""',
    ];
    for (const text of texts) {
      const result = masked(text);
      expect(result.text).toBe(text);
      expect(result.count).toBe(0);
    }
  });

  it('masks a bare key=value that sits between two quoted strings (found by the property below, seed 864880477)', () => {
    const r = new Redactor(['pwd', 'my-custom.key']);
    const masked = r.redact(" OPTIONS (path '/x', pwd 'QQ')  pwd=Q ':? pwd=Q ");
    // The text between the quotes is no quoted key: `?` is filler, not its value.
    expect(masked.text).toBe(" OPTIONS (path '/x', pwd '***')  pwd=*** ':? pwd=*** ");
    expect(masked.count).toBe(3);
    expect(r.redact(`{"pwd": "v", "a": "b"}`).text).toBe(`{"pwd": "***", "a": "b"}`);
  });

  it('does nothing with no keys configured', () => {
    expect(masked('password=x', new Redactor([]))).toEqual({ text: 'password=x', count: 0 });
  });
});

describe('redactKeyList', () => {
  it('reads a comma-separated list, trimmed, repeats (in any spelling) dropped', () => {
    expect(redactKeyList(' password , s3.secret-key,PASSWORD, pass_word ')).toEqual(['password', 's3.secret-key']);
    expect(redactKeyList('')).toEqual([]);
  });
  it('refuses entries that are not key names, naming them', () => {
    expect(() => redactKeyList('password,,token')).toThrow(/no empty entry/);
    expect(() => redactKeyList('pass word')).toThrow(/"pass word"/);
    expect(() => redactKeyList('...')).toThrow(/"\.\.\."/);
    expect(() => redactKeyList('x'.repeat(65))).toThrow(/at most 64 characters/);
    expect(() => redactKeyList(Array.from({ length: 65 }, (_, i) => `k${i}`).join(','))).toThrow(/at most 64 keys/);
  });
});

// Values are built from Q, J and X, which no key and no filler text contains: any of them left
// in the output is a leaked piece of a secret.
const LEAK = /[QJX]/;
const secretChars = fc.constantFrom('Q', 'J', 'X');
const bareSecret = fc.array(secretChars, { minLength: 1, maxLength: 12 }).map((cs) => cs.join(''));
const quotedSecret = fc
  .array(fc.oneof(secretChars, fc.constantFrom(' ', ',', '=', ':', '(', ')', '{', '}', ';', '&')), { minLength: 1, maxLength: 16 })
  .map((cs) => `Q${cs.join('')}`);
/** Filler: any text without the letters of secrets or any configured key in it. */
function filler(redactor: Redactor) {
  return fc.string({ maxLength: 12 }).filter((s) => !LEAK.test(s) && !/[qjx]/.test(s) && redactor.redact(s).count === 0 && !probes(redactor, s));
}
function probes(redactor: Redactor, s: string): boolean {
  return redactor.keys.some((k) => s.toLowerCase().replace(/[^a-z0-9]/g, '').includes(k.toLowerCase().replace(/[^a-z0-9]/g, '')));
}
const keyPart = fc.stringMatching(/^[a-z0-9]{0,4}$/).filter((s) => !/[qjx]/.test(s));

describe('Redactor: properties', () => {
  const keySets = fc.oneof(fc.constant([...DEFAULT_REDACT_KEYS]), fc.subarray([...DEFAULT_REDACT_KEYS], { minLength: 1 }), fc.constant(['pwd', 'my-custom.key']));

  it('no configured key’s value survives, in any promised syntax, and each is counted once', () => {
    fc.assert(
      fc.property(
        keySets.chain((keys) => {
          const redactor = new Redactor(keys);
          const key = fc.tuple(keyPart, fc.constantFrom(...keys), keyPart, fc.boolean()).map(([pre, k, post, upper]) => {
            const name = `${pre}${pre ? '.' : ''}${k}${post ? '_' : ''}${post}`;
            return upper ? name.toUpperCase() : name;
          });
          const pair = fc.oneof(
            fc.tuple(key, bareSecret).map(([k, v]) => `${k}=${v}`),
            fc.tuple(key, quotedSecret).map(([k, v]) => `'${k}' = '${v}'`),
            fc.tuple(key, quotedSecret).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`),
            fc.tuple(key, quotedSecret).map(([k, v]) => JSON.stringify(JSON.stringify({ [k]: v }))),
            fc.tuple(key, quotedSecret).map(([k, v]) => `OPTIONS (path '/x', ${k} '${v}')`),
            fc.tuple(key, quotedSecret).map(([k, v]) => `WITH ("${k}" = '${v}')`),
            fc.tuple(key, quotedSecret).map(([k, v]) => `${k} '${v}'`),
            fc.tuple(key, quotedSecret).map(([k, v]) => `${JSON.stringify(k)}: [${JSON.stringify(v)}]`),
            fc.tuple(key, bareSecret, fc.constantFrom('\n', '\r\n', ' \t ')).map(([k, v, ws]) => `${k}${ws}=${ws}${v}`),
          );
          return fc.record({
            keys: fc.constant(keys),
            parts: fc.array(fc.tuple(filler(redactor), pair), { minLength: 1, maxLength: 5 }),
            tail: filler(redactor),
          });
        }),
        ({ keys, parts, tail }) => {
          const redactor = new Redactor(keys);
          // Pairs are separated by a space so filler never runs into a bare key or value.
          const text = parts.map(([fill, pair]) => `${fill} ${pair} `).join('') + tail;
          const result = redactor.redact(text);
          expect(result.text).not.toMatch(LEAK);
          expect(result.count).toBe(parts.length);
          expect(redactor.redact(result.text)).toEqual({ text: result.text, count: 0 });
        },
      ),
      { numRuns: 400 },
    );
  });

  it('text in which no configured key names a value is returned byte for byte', () => {
    const prose = fc.array(
      fc.oneof(
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.constantFrom('password', 'the secret is', '"token"', "'credential'", '["api-key"]', 'x = token', '{"k":"secret"}', 'token >= 1', "kind='password'"),
        fc.tuple(fc.stringMatching(/^[a-z]{1,6}$/), fc.string()).map(([k, v]) => `${k}=${v}`),
      ),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(keySets, prose, (keys, pieces) => {
        const redactor = new Redactor(keys);
        const text = pieces.join(' ');
        // Only texts where no configured key is a key name: bare keys before = are short words.
        fc.pre(!pieces.some((p) => /^[a-z]{1,6}=/.test(p) && redactor.isSensitiveKey(p.slice(0, p.indexOf('=')))));
        fc.pre(!/[\w.$-]+\s*=>?|["'`][^"'`]*["']\s*[:=]|[\w.$-]\s+'|:\/\/|identified/i.test(text) || !keySites(redactor, text));
        const result = redactor.redact(text);
        expect(result.count).toBe(0);
        expect(result.text).toBe(text);
      }),
      { numRuns: 400 },
    );
  });
});

/** Whether any key=value, quoted-key, `key 'literal'` or password site in `text` names a configured key (then masking may apply). */
function keySites(redactor: Redactor, text: string): boolean {
  for (const m of text.matchAll(/(?:(["'`])([^"'`\r\n]*)\1\s*[:=]|([\w.$-]+)\s*=|([\w.$-]+)\s+(?='))/g)) {
    if (redactor.isSensitiveKey(m[2] ?? m[3] ?? m[4] ?? '')) return true;
  }
  for (const m of text.matchAll(/(?:WITH|OPTIONS|TBLPROPERTIES|SERDEPROPERTIES|PROPERTIES)\s*\(/gi)) if (m) return true;
  // Passwords named by their syntax: a URL's user:password@, IDENTIFIED BY '…'.
  if (redactor.isSensitiveKey('password') && (/:\/\/[^\s/?#;'"`<>\\]*:[^\s/?#;'"`<>\\]*@/.test(text) || /identified\s/i.test(text))) return true;
  return false;
}

it('masks exactly the value, never the key or what follows', () => {
  expect(defaults.redact(`a=1 password=${'Q'.repeat(5)} b=2`).text).toBe(`a=1 password=${REDACTION_MASK} b=2`);
});

// Shapes a security review found stored unmasked. Each expected text is also checked to be a
// fixed point (masking twice changes nothing).
function expectMasked(cases: Array<[string, string, number]>, redactor = defaults): void {
  for (const [input, expected, count] of cases) {
    expect(redactor.redact(input), input).toEqual({ text: expected, count });
    expect(redactor.redact(expected), expected).toEqual({ text: expected, count: 0 });
  }
}

/** Text in which nothing is a secret: it must come back as the very same string. */
function expectUntouched(texts: string[], redactor = defaults): void {
  for (const text of texts) expect(redactor.redact(text), text).toEqual({ text, count: 0 });
}

describe('Redactor: line breaks and other whitespace around the separator', () => {
  it('masks a value separated from its key by line breaks, tabs or non-breaking spaces', () => {
    expectMasked([
      ['password=\nhunter2', 'password=\n***', 1],
      ['password =\r\n  hunter2', 'password =\r\n  ***', 1],
      ["WITH (\n 'password' =\n 'hunter2')", "WITH (\n 'password' =\n '***')", 1],
      ["CREATE CATALOG pg WITH (\n  'connector' = 'jdbc',\n  'password' =\n    'hunter2'\n)", "CREATE CATALOG pg WITH (\n  'connector' = 'jdbc',\n  'password' =\n    '***'\n)", 1],
      ['{"password":\r\n"hunter2"}', '{"password":\r\n"***"}', 1],
      ['{\n  "user": "bob",\n  "password"\n    : "hunter2"\n}', '{\n  "user": "bob",\n  "password"\n    : "***"\n}', 1],
      ['password\u00a0=\u00a0hunter2', 'password\u00a0=\u00a0***', 1],
      ['password\t=>\n\thunter2', 'password\t=>\n\t***', 1],
    ]);
  });

  it('still leaves other operators and empty values alone across lines', () => {
    expectUntouched(['password\n== 4', 'password=\n', "kind =\n'password'", 'token\n>= 5']);
  });
});

describe('Redactor: lists under a sensitive key', () => {
  it('masks every value of an array under a sensitive key (a Go http.Header, a Java list)', () => {
    const header = JSON.stringify({ method: 'GET', headers: { Authorization: ['Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'], Cookie: ['session=abc123sess'], 'X-Api-Key': ['abcdef123456'], Accept: ['application/json'] } });
    expectMasked([
      [header, '{"method":"GET","headers":{"Authorization":["***"],"Cookie":["***"],"X-Api-Key":["***"],"Accept":["application/json"]}}', 3],
      ['{"password": ["hunter2"]}', '{"password": ["***"]}', 1],
      ['{"token": [123, null, true, ["nested", "x"]], "tags": ["a"]}', '{"token": ["***", null, "***", ["***", "***"]], "tags": ["a"]}', 4],
      ['{"detail":"{\\"password\\":[\\"pw1\\",\\"pw2\\"]}"}', '{"detail":"{\\"password\\":[\\"***\\",\\"***\\"]}"}', 2],
      ['{user=bob, passwords=[pw1, pw2], roles=[admin]}', '{user=bob, passwords=[***, ***], roles=[admin]}', 2],
      ['password=(hunter2)', 'password=(***)', 1],
    ]);
  });

  it('looks at the members of objects in such an array instead of masking them whole', () => {
    expectMasked([['{"credentials": [{"user": "bob", "password": "pw"}], "n": 1}', '{"credentials": [{"user": "bob", "password": "***"}], "n": 1}', 1]]);
  });

  it('scans a parenthesized list of keys after a sensitive key, as it does an object (Snowflake CREDENTIALS)', () => {
    expectMasked([
      [
        "CREATE STAGE s URL='s3://b' CREDENTIALS=(AWS_KEY_ID='AKIAEXAMPLE' AWS_SECRET_KEY='wJalrXUtnFEMIK7MDENG')",
        "CREATE STAGE s URL='s3://b' CREDENTIALS=(AWS_KEY_ID='AKIAEXAMPLE' AWS_SECRET_KEY='***')",
        1,
      ],
      ["COPY INTO t FROM @s CREDENTIALS = ( AWS_ROLE = 'arn:aws:iam::1:role/r' ) password=(x, 'y')", "COPY INTO t FROM @s CREDENTIALS = ( AWS_ROLE = 'arn:aws:iam::1:role/r' ) password=(***, '***')", 2],
    ]);
  });

  it('does not take a subquery after a sensitive-looking column for a list of values', () => {
    expectUntouched([
      'UPDATE users SET password_changed = (SELECT max(ts) FROM audit WHERE kind = 1)',
      'SELECT * FROM t WHERE token_count IN (SELECT n FROM limits) OR secret_level = (WITH x AS (SELECT 1) SELECT * FROM x)',
    ]);
  });

  it('leaves arrays under other keys alone', () => {
    expectUntouched(['{"headers":{"Accept":["application/json"],"X-Trace":["t1"]}}', '{"kind":"password","list":["secret","token"]}', 'roles=[admin, password_reset]']);
  });
});

describe('Redactor: SQL that gives a secret as a literal after its key, with no separator', () => {
  it('masks a quoted literal right after a sensitive key word', () => {
    expectMasked([
      ["CREATE USER alice WITH PASSWORD 'hunter2'", "CREATE USER alice WITH PASSWORD '***'", 1],
      ["create user alice with encrypted password 'hunter2' valid until '2027-01-01'", "create user alice with encrypted password '***' valid until '2027-01-01'", 1],
      ["ALTER ROLE alice PASSWORD 'hunter2'", "ALTER ROLE alice PASSWORD '***'", 1],
      ["ALTER ROLE alice PASSWORD\n  'it''s'", "ALTER ROLE alice PASSWORD\n  '***'", 1],
      [
        "COPY t FROM 's3://b/k' ACCESS_KEY_ID 'AKIAEXAMPLE' SECRET_ACCESS_KEY 'wJalrXUtnFEMIK7MDENG' SESSION_TOKEN 'FQoG' REGION 'us-east-1'",
        "COPY t FROM 's3://b/k' ACCESS_KEY_ID '***' SECRET_ACCESS_KEY '***' SESSION_TOKEN '***' REGION 'us-east-1'",
        3,
      ],
      [
        "CREATE SECRET my_s3 (TYPE S3, KEY_ID 'AKIAEXAMPLE', SECRET 'wJalrXUtnFEMIK7MDENG', REGION 'us-east-1')",
        "CREATE SECRET my_s3 (TYPE S3, KEY_ID 'AKIAEXAMPLE', SECRET '***', REGION 'us-east-1')",
        1,
      ],
      ["CREATE SECRET hf (TYPE HUGGINGFACE, TOKEN 'hf_abc')", "CREATE SECRET hf (TYPE HUGGINGFACE, TOKEN '***')", 1],
      ["CREATE TABLE t USING jdbc OPTIONS (url 'jdbc:x', password 'p''w', user 'bob')", "CREATE TABLE t USING jdbc OPTIONS (url 'jdbc:x', password '***', user 'bob')", 1],
    ]);
  });

  it('leaves columns, options without a literal and parser messages alone', () => {
    expectUntouched([
      'SELECT password_hint FROM users',
      'SELECT token, secret FROM t WHERE x = 1',
      "SELECT secret_name FROM vault WHERE owner IN ('bob')",
      'ALTER USER bob PASSWORD_REUSE_MAX 5 PASSWORD EXPIRE',
      'CREATE USER bob WITH PASSWORD NULL',
      "COMMENT ON COLUMN users.password IS 'bcrypt hash'",
      "SELECT * FROM users WHERE password LIKE 'x%' OR level = 'top'",
      "SyntaxError: Unexpected token 'o', \"not json\" is not valid JSON",
      "unrecognized token 'FROM' at line 1",
      "CREATE SECRET my_s3 (TYPE S3, KEY_ID 'AKIAEXAMPLE', REGION 'us-east-1')",
    ]);
  });
});

describe('Redactor: passwords given without the word password', () => {
  it('masks the password of a URL (scheme://user:password@host), wherever the URL is', () => {
    expectMasked([
      ['postgresql://bob:hunter2@db.internal:5432/prod', 'postgresql://bob:***@db.internal:5432/prod', 1],
      [
        "CREATE TABLE t WITH (location='s3a://AKIAEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY@bucket/p')",
        "CREATE TABLE t WITH (location='s3a://AKIAEXAMPLE:***@bucket/p')",
        1,
      ],
      ['jdbc:postgresql://bob:hunter2@db/x?ssl=true&password=other', 'jdbc:postgresql://bob:***@db/x?ssl=true&password=***', 2],
      ['redis://:hunter2@cache:6379/0 and mongodb://u:p@ss@h1:27017,h2:27017/db', 'redis://:***@cache:6379/0 and mongodb://u:***@h1:27017,h2:27017/db', 2],
      ['{"uri":"amqp://guest:gu3st@mq/vhost"}', '{"uri":"amqp://guest:***@mq/vhost"}', 1],
      ['a://b://u:pw@h', 'a://b://u:***@h', 1],
    ]);
  });

  it('masks IDENTIFIED BY literals', () => {
    expectMasked([
      ["CREATE USER bob IDENTIFIED BY 'hunter2'", "CREATE USER bob IDENTIFIED BY '***'", 1],
      ["ALTER USER 'bob'@'%' IDENTIFIED WITH caching_sha2_password BY 'hunter2'", "ALTER USER 'bob'@'%' IDENTIFIED WITH caching_sha2_password BY '***'", 1],
      ['CREATE USER app identified by "Hunter2"', 'CREATE USER app identified by "***"', 1],
    ]);
  });

  it('leaves URLs without a password, and such passwords when password is not a configured key, alone', () => {
    expectUntouched([
      'https://b.s3.amazonaws.com/k?x=1',
      's3://bucket/p/q.parquet',
      'ssh://git@github.com:22/org/repo.git',
      'https://medium.com/@bob/post:1',
      "SELECT * FROM read_parquet('https://host:8443/x@y/z.parquet')",
      'jdbc:sqlserver://srv.database.windows.net:1433;database=db;user=bob@srv;encrypt=true',
      'http://host:8080 mail bob@example.com',
      'CREATE USER bob IDENTIFIED BY RANDOM PASSWORD',
      'users identified by email',
    ]);
    expectUntouched(['postgresql://bob:hunter2@db/x', "IDENTIFIED BY 'x'"], new Redactor(['secret', 'ssn']));
    expect(new Redactor([]).redact('postgresql://bob:hunter2@db/x').count).toBe(0);
  });
});

describe('Redactor: default keys for ODBC, passphrases and signed URLs', () => {
  it('masks Pwd, passphrases, Azure SAS sig and S3/GCS presigned signatures', () => {
    expectMasked([
      ['Driver={PostgreSQL};Server=db;Uid=bob;Pwd=hunter2;', 'Driver={PostgreSQL};Server=db;Uid=bob;Pwd=***;', 1],
      ['DB_PWD=hunter2 dbPwd=x2', 'DB_PWD=*** dbPwd=***', 2],
      ['sslpassphrase=hunter2 ssl.key.passphrase=h2', 'sslpassphrase=*** ssl.key.passphrase=***', 2],
      [
        'abfss://c@acct.dfs.core.windows.net/p?sv=2022-11-02&ss=b&sig=Zm9vYmFyc2lnbmF0dXJl&se=2026',
        'abfss://c@acct.dfs.core.windows.net/p?sv=2022-11-02&ss=b&sig=***&se=2026',
        1,
      ],
      [
        'https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=host&X-Amz-Signature=deadbeef',
        'https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=host&X-Amz-Signature=***',
        1,
      ],
      ['https://storage.googleapis.com/b/o?X-Goog-Signature=0a1b&X-Goog-Expires=900', 'https://storage.googleapis.com/b/o?X-Goog-Signature=***&X-Goog-Expires=900', 1],
    ]);
  });

  it('matches a short key only as a word of a key name, so it does not mask names that merely contain its letters', () => {
    expectUntouched([
      'SELECT * FROM t WHERE signature_id = 5',
      'signal=5 design=flat sigma=0.5 config=x cwd=/tmp stepwd=3',
      "UPDATE docs SET signature_valid = true, SignatureVersion = '4' WHERE id = 1",
    ]);
    expect(defaults.isSensitiveKey('X-Sig')).toBe(true);
    expect(defaults.isSensitiveKey('PWDHash')).toBe(true);
    expect(defaults.isSensitiveKey('signature')).toBe(false);
    const custom = new Redactor(['ssn', 'key']);
    expect(custom.redact('ssn=1 user_ssn=2 ssnumber=3 monkey=4 s3.access-key=5 apikey=6').text).toBe('ssn=*** user_ssn=*** ssnumber=3 monkey=4 s3.access-key=*** apikey=6');
  });
});

describe('Redactor: adversarial input', () => {
  // Every scan reads each character a bounded number of times (no regex here backtracks over
  // more than a key name's 256 characters), so 64 KiB of any of these is masked in a few
  // milliseconds; a super-linear construct would take far longer than the test timeout.
  const N = 64 * 1024;
  const fill = (unit: string): string => unit.repeat(Math.ceil(N / unit.length)).slice(0, N);
  const inputs: Record<string, string> = {
    quotedKeys: fill("'password   "),
    separatedLetters: fill('p_a_s_s_w_o_r_'),
    longQuotedRuns: fill(`'${'x'.repeat(250)}'=`),
    keyChain: fill('password='),
    propertyLists: fill(`WITH (${"password 'x', ".repeat(3)}`),
    escapedQuotes: fill('\\"password\\":\\"'),
    unclosedOptions: fill(`OPTIONS (${'k '.repeat(20)}`),
    keyThenWhitespace: `password${' \r\n\t'.repeat(N / 4)}x`,
    keyWordsAndLineBreaks: fill('token \r\n  '),
    literalAfterKeyUnclosed: fill("password '"),
    parserMessages: fill("unexpected token 'x' "),
    schemes: fill('a://b:c'),
    schemeColons: `a://${':'.repeat(N)}`,
    userinfo: fill('x://u:p@'),
    identifiedWith: fill('IDENTIFIED WITH x '),
    arraysOfKeys: fill('"password":['),
    deepArray: `"password":${'['.repeat(N)}`,
    deepParens: `password=${'('.repeat(N)}`,
    longElements: `"password":[${fill(`"${'x'.repeat(300)}",`)}`,
    unterminatedElements: fill(`"password":["${'x'.repeat(200)}`),
    listOfKeys: `password=(${fill("k 'v' ")}`,
    camelCase: `pwd${fill('aB')}=x`,
    nestedCalls: `password=${fill("f(g('x', ")}`,
    callNames: fill("password=crypt('"),
  };
  for (const [name, text] of Object.entries(inputs)) {
    it(`masks 64 KiB of ${name} in one pass, and the result is a fixed point`, () => {
      expect(text.length).toBeGreaterThanOrEqual(N);
      const result = defaults.redact(text);
      expect(result.text.length).toBeLessThanOrEqual(text.length + 4 * result.count);
      expect(defaults.redact(result.text)).toEqual({ text: result.text, count: 0 });
    });
  }
});

describe('Redactor: a call as the value of a sensitive key', () => {
  it('masks the arguments of the call rather than its name, so the password inside is not left behind', () => {
    expectMasked([
      ["UPDATE users SET password = crypt('hunter2', gen_salt('bf')) WHERE id = 1", "UPDATE users SET password = crypt('***', gen_salt('***')) WHERE id = 1", 2],
      ["SET PASSWORD = PASSWORD('hunter2')", "SET PASSWORD = PASSWORD('***')", 1],
      ["password = encode(digest('hunter2', 'sha256'), 'hex')", "password = encode(digest('***', '***'), '***')", 3],
    ]);
  });
});
