// A scripted upstream for SDK tests that need real provider payloads: it answers each
// provider path from a queue of replies (status + body, usually an SSE fixture from
// tests/data) and records every request body it was sent. An empty queue answers 500,
// so a test never passes on a reply it did not script.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DATA = join(dirname(fileURLToPath(import.meta.url)), '..', 'data');

export function fixture(name) {
  return readFileSync(join(DATA, name), 'utf8');
}

export async function startFakeProvider() {
  const queues = new Map(); // path prefix -> [{ status, body, contentType }]
  const requests = []; // { path, body }
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      requests.push({ path: req.url, body: body ? JSON.parse(body) : null });
      const prefix = [...queues.keys()].find((p) => req.url.startsWith(p));
      const reply = prefix ? queues.get(prefix).shift() : undefined;
      if (!reply) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: `no scripted reply for ${req.url}` } }));
        return;
      }
      res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'text/event-stream' });
      res.end(reply.body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    // Queues replies for requests whose path starts with `prefix`.
    script(prefix, ...replies) {
      if (!queues.has(prefix)) queues.set(prefix, []);
      queues.get(prefix).push(...replies);
    },
    requestsTo(prefix) {
      return requests.filter((r) => r.path.startsWith(prefix)).map((r) => r.body);
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
