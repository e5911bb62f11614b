/**
 * The proxies' door: a toxic TCP proxy in front of Redis or MariaDB (tcp-proxy.ts: stall, latency,
 * bandwidth, resets), in the harness's process or in a child process of its own driven over IPC
 * (proxy-process.ts, proxy-child.ts), so that a busy load generator never delays the bytes.
 */
export { startProxyProcess, type ProxyProcess, type ProxyStats, type RemoteProxy } from './proxy-process.js';
export { startTcpProxy, type Direction, type TcpProxy, type Toxic } from './tcp-proxy.js';
