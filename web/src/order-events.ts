import { createParser } from 'eventsource-parser';
import { api, session, type Order, type OrderState } from './api';

/** States after which an order changes no more on this page (the server ends its stream there). */
const FINAL: ReadonlySet<OrderState> = new Set<OrderState>(['paid', 'used', 'cancelled', 'refunding', 'refunded']);

/**
 * Follows an order's state until `created` or a final state: pushed by the server
 * (GET /voucher-order/{id}/events, Server-Sent Events read with fetch so that the `authorization`
 * header goes along, which EventSource cannot send); when the stream cannot be opened or breaks
 * off, by polling GET /voucher-order/{id} as before.
 */
export async function followOrder(order: Order, onChange: (order: Order) => void, alive: () => boolean): Promise<void> {
  const settled = (state: OrderState) => state !== 'queued';
  try {
    const streamed = await streamStates(order, onChange, alive, settled);
    if (streamed) return;
  } catch {
    // fall through to polling
  }
  for (let i = 0; i < 60 && alive() && !settled(order.state); i++) {
    await new Promise((resolve) => setTimeout(resolve, i < 10 ? 300 : 1000));
    order = (await api.order(order.id)).data;
    onChange(order);
  }
}

/** True when the stream brought the order to a settled state; false (or a throw) to fall back to polling. */
async function streamStates(order: Order, onChange: (order: Order) => void, alive: () => boolean, settled: (state: OrderState) => boolean): Promise<boolean> {
  const abort = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (session.token) headers.authorization = session.token;
  const response = await fetch(`/api/voucher-order/${order.id}/events`, { headers, signal: abort.signal });
  if (!response.ok || !response.body) return false;
  let done = false;
  const parser = createParser({
    onEvent: (event) => {
      if (event.event !== 'state') return;
      const next = JSON.parse(event.data) as Pick<Order, 'id' | 'voucherId' | 'state'>;
      order = { ...order, ...next };
      onChange(order);
      if (settled(order.state) || FINAL.has(order.state)) done = true;
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    while (!done && alive()) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      parser.feed(value);
    }
  } finally {
    abort.abort();
  }
  return done;
}
