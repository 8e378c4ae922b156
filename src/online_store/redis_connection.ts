/**
 * One Redis connection (`redis`, node-redis) with the behaviour both sides of the online store need:
 * values come back as Buffers (embeddings are raw float32 bytes), connecting gives up after a bounded
 * time with an error that names the URL, and commands issued in the same tick go out as one pipeline
 * (node-redis's automatic pipelining), which is what makes a million SETs take seconds.
 */
import { createClient, RESP_TYPES } from 'redis';
import { GnnctlError, ExitCode } from '../core/errors.js';

/** The online store could not be reached or refused a command: nothing was switched. */
export class OnlineStoreError extends GnnctlError {
  readonly exitCode = ExitCode.artifact;
}

export type RedisConnection = ReturnType<typeof connectionOf>;

function connectionOf(url: string, connectTimeoutMs: number, reconnect: boolean) {
  return createClient({
    url,
    socket: {
      connectTimeout: connectTimeoutMs,
      // A publisher fails fast; a server keeps retrying in the background (its reads fall back meanwhile).
      reconnectStrategy: reconnect ? (retries: number) => Math.min(50 * 2 ** retries, 1000) : false,
    },
    // Commands sent while disconnected fail at once instead of queueing behind a dead socket.
    disableOfflineQueue: true,
  }).withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
}

/** Connects, or throws OnlineStoreError naming the URL (without its password). */
export async function connectRedis(url: string, options: { connectTimeoutMs?: number; reconnect?: boolean; what?: string } = {}): Promise<RedisConnection> {
  const client = connectionOf(url, options.connectTimeoutMs ?? 5000, options.reconnect ?? false);
  // node-redis emits 'error' for socket problems; without a listener Node would throw them.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (e) {
    throw new OnlineStoreError(`cannot connect to the online store ${redactUrl(url)}: ${(e as Error).message}`, {
      where: options.what,
      hint: 'is redis-server running there? (redis-cli -u <url> ping)',
    });
  }
  return client;
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
