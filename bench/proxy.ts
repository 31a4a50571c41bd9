/**
 * A small round-robin TCP proxy on loopback (node:net) standing in for the load
 * balancer in front of several replicas. Each client connection goes to the next
 * backend in turn; a backend that refuses a connection is marked down for a while and
 * the connection is tried on the next one, so clients reconnecting after a replica died
 * land on a live one. Bytes are piped as they are (HTTP keep-alive and all).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** What the proxy counted. */
export interface ProxyStats {
  /** Client connections accepted. */
  connections: number;
  /** Connections moved to another backend because the chosen one refused. */
  failovers: number;
  /** Client connections closed because no backend accepted. */
  dropped: number;
}

/** A listening proxy. */
export interface Proxy {
  port: number;
  stats: ProxyStats;
  close: () => Promise<void>;
}

/**
 * Listen on 127.0.0.1 (a kernel-chosen port) and spread connections over `backends`.
 *
 * @param backends loopback ports of the replicas.
 * @param downMs how long a backend that refused stays skipped, milliseconds.
 */
export function startProxy(backends: number[], downMs = 1000, port = 0): Promise<Proxy> {
  const stats: ProxyStats = { connections: 0, failovers: 0, dropped: 0 };
  const downUntil = new Map<number, number>();
  const sockets = new Set<Socket>();
  let turn = 0;

  /** Connect `client` to a live backend, trying each at most once from the next in turn. */
  const route = (client: Socket, tried: number) => {
    if (tried >= backends.length) {
      stats.dropped++;
      client.destroy();
      return;
    }
    const now = Date.now();
    let port = backends[turn++ % backends.length]!;
    // Skip backends recently seen down, unless every one is.
    for (let i = 0; i < backends.length && (downUntil.get(port) ?? 0) > now; i++) port = backends[turn++ % backends.length]!;
    const upstream = createConnection({ host: '127.0.0.1', port });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', () => {
      if (!connected) {
        downUntil.set(port, Date.now() + downMs);
        stats.failovers++;
        route(client, tried + 1);
      } else client.destroy();
    });
    client.on('close', () => upstream.destroy());
  };

  const server: Server = createServer((client) => {
    stats.connections++;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    route(client, 0);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error('no TCP address'));
        return;
      }
      resolve({
        port: address.port,
        stats,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
