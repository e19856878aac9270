import net from 'node:net';

/**
 * A TCP forwarder in front of a server the test must not disturb (the shared MariaDB): closing it
 * looks to the service like the server went away, reopening it like the server came back.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** Listens, on the same port as before when reopened. */
  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const [socket, peer] of [[client, upstream], [upstream, client]] as const) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => peer.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and cuts every open connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
