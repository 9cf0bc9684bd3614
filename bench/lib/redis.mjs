/**
 * Redis helper shared by the bench and soak scripts: whether a Redis answers PING, so a run that
 * needs one (the multi-node shape's shared rate limits) can say so plainly instead of failing later.
 */
import net from 'node:net';

/** True when `url` (redis://host:port) answers PING within 2 s. */
export async function redisReachable(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || 6379) });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}
