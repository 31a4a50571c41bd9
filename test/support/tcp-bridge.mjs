/**
 * A byte pipe for qemu's `guestfwd=...-cmd:` (one process per guest connection, the
 * connection on stdin/stdout): connects to 127.0.0.1:<port> (argv[2]) and copies bytes
 * both ways, half-closing each side when the other ends. Lets a `restrict=on` guest
 * reach the test service and nothing else.
 */
import { connect } from 'node:net';

const socket = connect(Number(process.argv[2]), '127.0.0.1');
process.stdin.pipe(socket);
socket.pipe(process.stdout);
socket.on('error', () => process.exit(1));
socket.on('close', () => process.exit(0));
