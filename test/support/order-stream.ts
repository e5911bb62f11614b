import { createParser } from 'eventsource-parser';
import { Agent } from 'undici';
import { expect } from 'vitest';
import { eventually } from './eventually.js';

/** A client of GET /api/voucher-order/{id}/events, as the web page reads it (fetch, the SSE format). */
export interface OrderStreamClient {
  status: number;
  headers: Headers;
  /** The states received, in order. */
  states: string[];
  /** Heartbeat comments received. */
  heartbeats: number;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Waits until `state` has been received. */
  waitFor(state: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

/**
 * The connections of every stream client, closed by `closeOrderStreams()` at the end of a test
 * file (an idle keep-alive connection of the global fetch would hold a closing server up).
 */
let agent: Agent | undefined;

export async function closeOrderStreams(): Promise<void> {
  const closing = agent;
  agent = undefined;
  await closing?.destroy();
}

export async function openOrderStream(baseUrl: string, orderId: string, authorization: string): Promise<OrderStreamClient> {
  const abort = new AbortController();
  const response = await fetch(`${baseUrl}/api/voucher-order/${orderId}/events`, {
    headers: { authorization },
    signal: abort.signal,
    // @ts-expect-error -- undici's fetch option, not in the DOM RequestInit
    dispatcher: (agent ??= new Agent()),
  });
  const client: OrderStreamClient = {
    status: response.status,
    headers: response.headers,
    states: [],
    heartbeats: 0,
    ended: Promise.resolve(),
    waitFor: (state, timeoutMs = 15_000) => eventually(() => expect(client.states).toContain(state), timeoutMs).then(() => undefined),
    close: () => abort.abort(),
  };
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    return client;
  }
  const parser = createParser({
    onEvent: (event) => {
      if (event.event === 'state') client.states.push((JSON.parse(event.data) as { state: string }).state);
    },
    onComment: () => {
      client.heartbeats += 1;
    },
  });
  const body = response.body.pipeThrough(new TextDecoderStream());
  client.ended = (async () => {
    try {
      for await (const chunk of body) parser.feed(chunk);
    } catch {
      // closed by the client
    }
  })();
  return client;
}
