import net from 'node:net';

/**
 * A TCP forwarder in front of a server the test must not disturb (the shared MariaDB): closing it
 * looks to the service like the server went away, reopening it like the server came back. With
 * `delayMs` it holds every chunk that long in each direction, like a server across a network (the
 * bench's --db-latency).
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly delayMs = 0,
  ) {}

  /** Listens, on the same port as before when reopened. */
  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const [socket, peer] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.sockets.add(socket);
        socket.setNoDelay(true);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => peer.destroy());
      }
      if (this.delayMs === 0) client.pipe(upstream).pipe(client);
      else
        for (const [from, to] of [
          [client, upstream],
          [upstream, client],
        ] as const)
          this.delay(from, to);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Timers of one duration fire in the order they were set, so the byte stream keeps its order. */
  private delay(from: net.Socket, to: net.Socket): void {
    from.on('data', (chunk) => setTimeout(() => to.destroyed || to.write(chunk), this.delayMs));
    from.on('close', () => setTimeout(() => to.destroy(), this.delayMs));
  }

  /** Stops listening and cuts every open connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
