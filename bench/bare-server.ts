/**
 * The baseline for the HTTP benchmark: a bare fastify route that answers every POST with
 * fixed bytes (the same cloud-config the real route serves), reading and discarding the
 * body. Listens on 127.0.0.1, port argv[2]; the bytes are the file argv[3].
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const body = readFileSync(process.argv[3]!);
const app = Fastify({ logger: false });
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => done(null, text));
app.get('/healthz', () => ({ status: 'ok' }));
app.post('/v1/render', (_request, reply) => reply.header('content-type', 'text/cloud-config; charset=utf-8').send(body));
await app.listen({ host: '127.0.0.1', port: Number(process.argv[2]) });
