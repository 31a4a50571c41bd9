/** Loopback helpers shared by the benchmarks. */
import { createServer, type AddressInfo } from 'node:net';

/** A free loopback port: listen on port 0, read the port the kernel gave, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
