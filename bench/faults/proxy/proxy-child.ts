// The proxy process (proxy-process.ts): toxic TCP proxies controlled over IPC. Says `ready`
// (an IPC message) once listening for requests; closes its proxies and exits on SIGTERM or
// when the parent goes.
import type { ProxyReply, ProxyRequest } from './proxy-process.js';
import { startTcpProxy, type Direction, type TcpProxy, type Toxic } from './tcp-proxy.js';

const proxies: TcpProxy[] = [];

async function handle(request: ProxyRequest): Promise<unknown> {
  const args = request.args ?? [];
  if (request.op === 'start') {
    const proxy = await startTcpProxy(args[0] as { host: string; port: number });
    proxies.push(proxy);
    return { index: proxies.length - 1, port: proxy.port };
  }
  const proxy = proxies[request.proxy ?? -1];
  if (!proxy) throw new Error(`no proxy ${String(request.proxy)}`);
  switch (request.op) {
    case 'addToxic':
      return proxy.addToxic(args[0] as string, args[1] as Toxic, args[2] as Direction | 'both');
    case 'removeToxic':
      return proxy.removeToxic(args[0] as string);
    case 'reset':
      return proxy.reset(args[0] as { refuseNew?: boolean });
    case 'restore':
      return proxy.restore();
    case 'stats':
      return {
        connectionsAccepted: proxy.connectionsAccepted,
        connectionsRefused: proxy.connectionsRefused,
        connectionsReset: proxy.connectionsReset,
        openConnections: proxy.openConnections,
        bytesForwarded: { ...proxy.bytesForwarded },
      };
  }
}

process.on('message', (request: ProxyRequest) => {
  handle(request).then(
    (result) => process.send?.({ id: request.id, result: result ?? null } satisfies ProxyReply),
    (error: unknown) => process.send?.({ id: request.id, error: (error as Error).message } satisfies ProxyReply),
  );
});
const shutdown = () => {
  void Promise.all(proxies.map((proxy) => proxy.close())).finally(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('disconnect', shutdown);
process.send?.('ready');
