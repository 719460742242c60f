import { createConnection } from 'node:net';

/**
 * One Redis `GET` over RESP, for the one key the bench reads (the cluster token the nodes keep
 * in Redis). Small enough not to add a Redis client dependency to the bench.
 */
export function redisGet(port: number, key: string, timeoutMs = 2000): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const keyBytes = Buffer.byteLength(key);
    let reply = Buffer.alloc(0);
    const finish = (err: Error | undefined, value?: string | null) => {
      socket.destroy();
      if (err) reject(err);
      else resolve(value ?? null);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`redis GET ${key} timed out after ${timeoutMs} ms`)));
    socket.on('error', (err) => finish(err));
    socket.on('connect', () => socket.write(`*2\r\n$3\r\nGET\r\n$${keyBytes}\r\n${key}\r\n`));
    socket.on('data', (chunk: Buffer) => {
      reply = Buffer.concat([reply, chunk]);
      const lineEnd = reply.indexOf('\r\n');
      if (lineEnd < 0) return;
      const head = reply.subarray(0, lineEnd).toString('utf8');
      if (head.startsWith('-')) return finish(new Error(`redis GET ${key}: ${head.slice(1)}`));
      if (!head.startsWith('$')) return finish(new Error(`redis GET ${key}: unexpected reply ${JSON.stringify(head)}`));
      const length = Number(head.slice(1));
      if (length < 0) return finish(undefined, null);
      if (reply.length < lineEnd + 2 + length) return; // more to come
      finish(undefined, reply.subarray(lineEnd + 2, lineEnd + 2 + length).toString('utf8'));
    });
  });
}
