/**
 * The connections of `gnnctl serve`: a cap on how many are open, a deadline for a new connection's
 * first request head, an optional cap per client address, and the connection side of graceful shutdown.
 *
 * Under a flood of connections that never finish a request (slowloris, a port scan, a misbehaving
 * proxy) the server must keep answering probes and the clients it already serves. So when the cap is
 * reached the guard does not refuse the newcomer: it drops the OLDEST connection that has not sent a
 * request head yet. A probe sends its request at once and is the newest connection, so it is answered;
 * a connection that has completed a request (an established client) is never dropped for a newcomer.
 * Only when every open connection has completed a request is the newcomer refused. Each dropped
 * connection costs one accept and one close: no file descriptor is held beyond the cap.
 *
 * Graceful shutdown (`drain`), as Envoy drains a listener: every answer carries `Connection: close`
 * (clients and load balancers move to another replica), and the listener keeps accepting while new
 * connections still arrive, up to the drain delay: closing it earlier would make the kernel reset every
 * connection it had completed and the process had not accepted yet, with the client's request already
 * sent. It closes once no new connection has arrived for `DRAIN_QUIET_MS` (or at the drain delay),
 * right after a poll phase accepted the backlog. Keep-alive connections are closed only between
 * requests (after their next answer, or once idle for `SHUTDOWN_GRACE_MS`), and connections that have
 * not delivered a complete request within `SHUTDOWN_GRACE_MS` of the signal (or of their arrival, when
 * later) are dropped, so a stalled client cannot hold a rolling update.
 */
import type { Server } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Counter, Gauge } from './metrics.js';

export interface ConnectionLimits {
  /** Open connections at most; beyond it the oldest connection without a request head is dropped. */
  maxConnections: number;
  /** Open connections per client address at most; 0: no per-client cap (clients behind one proxy share an address). */
  maxConnectionsPerClient: number;
  /** A new connection must deliver its first request head within this many milliseconds. */
  headersTimeoutMs: number;
}

/**
 * How long shutdown lets a connection finish sending a request (or an idle keep-alive connection send
 * one more) before dropping it. 1 s: a request on the wire arrives in well under that on a working link.
 */
export const SHUTDOWN_GRACE_MS = 1000;

/**
 * During a drain, the listener closes once no new connection has arrived for this long: clients that
 * honour `Connection: close` or the failing readiness probe have stopped connecting by then, so the
 * backlog is empty when it closes. 250 ms: longer than a client's reconnect after an answer, short enough
 * that a drained server exits promptly.
 */
export const DRAIN_QUIET_MS = 250;

/** How often the guard checks deadlines: the resolution of the headers timeout. */
const SWEEP_MS = 250;

export type DropReason = 'limit' | 'per_client' | 'headers_timeout' | 'shutdown';

interface Conn {
  key: string;
  socket: Socket;
  client: string;
  openedAt: number;
  /** Request heads received on this connection. */
  requests: number;
  /** A request is being answered. */
  busy: boolean;
  /** The current request's body has not fully arrived. */
  receiving: boolean;
  /** When the connection last finished an answer (or opened). */
  idleSince: number;
  /** Found stalled by the previous shutdown sweep; dropped if it still is at the next. */
  doomed: boolean;
}

interface Draining {
  since: number;
  /** When the last new connection arrived (or the drain began). */
  lastConnection: number;
  /** New connections accepted during the drain. */
  accepted: number;
  /** When the listener was told to close. */
  closedAt: number;
  dropped: number;
  closedIdle: number;
  /** Closes the listener now (idempotent): the quiet period or the drain delay ended, or shutdown is forced. */
  closeListener: () => void;
}

export interface ConnectionGuardOptions extends ConnectionLimits {
  /** `gnnctl_http_connections`: open connections. */
  openGauge: Gauge;
  /** `gnnctl_http_connections_dropped_total{reason}`. */
  dropped: Counter;
  log?: (line: string) => void;
}

export class ConnectionGuard {
  private readonly opts: ConnectionGuardOptions;
  /** Keyed by the remote address and port, the same for a TLS socket and the TCP socket under it. */
  private readonly conns = new Map<string, Conn>();
  /** Connections without a request head yet, oldest first (Map keeps insertion order). */
  private readonly fresh = new Map<string, Conn>();
  private readonly perClient = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;
  private draining: Draining | undefined;
  private drained: Promise<void> | undefined;
  private lastSweep = performance.now();
  private lastLimitLog = 0;
  private droppedSinceLog = 0;

  /** `server`: the HTTP(S) server, or the plain TCP listener in front of the gRPC server (`grpc_server.ts`). */
  constructor(server: NetServer, options: ConnectionGuardOptions) {
    this.opts = options;
    // A listener of the TCP server's 'connection': for HTTPS it sees the socket before the TLS handshake,
    // so a flood of unfinished handshakes counts too.
    server.on('connection', (socket: Socket) => this.onConnection(socket));
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
    options.openGauge.set({}, 0);
  }

  /** Open connections. */
  get open(): number {
    return this.conns.size;
  }

  /** Marks the request's connection as serving a request; call on every request. */
  requestStarted(req: IncomingMessage, res: ServerResponse): void {
    const c = this.conns.get(keyOf(req.socket));
    if (!c) return;
    c.requests++;
    c.busy = true;
    c.doomed = false;
    c.receiving = !req.complete;
    this.fresh.delete(c.key);
    if (c.receiving) req.once('end', () => (c.receiving = false));
    res.once('close', () => {
      c.busy = false;
      c.receiving = false;
      c.idleSince = performance.now();
    });
  }

  /**
   * Marks the connection from `address`:`port` as an established client (it has sent a request), so it
   * is never dropped for a newcomer: what `requestStarted` does for HTTP, for a gRPC call's peer.
   */
  requestFrom(address: string, port: number): void {
    const c = this.conns.get(`${address}|${port}`);
    if (!c || c.requests > 0) return;
    c.requests++;
    this.fresh.delete(c.key);
  }

  /**
   * Shutdown: keeps accepting while new connections arrive (at most `drainDelayMs`; 0 closes the listener
   * at once), then closes the listener; until every connection is gone, drops connections without a
   * complete request after `SHUTDOWN_GRACE_MS` and idle keep-alive connections once idle that long.
   * Resolves when the listener is closed and no connection is left.
   */
  drain(server: Server, drainDelayMs = 0): Promise<void> {
    if (this.draining) return this.drained!;
    const since = performance.now();
    let resolveDrained!: () => void;
    this.drained = new Promise<void>((resolve) => (resolveDrained = resolve));
    let closing = false;
    let timer: NodeJS.Timeout | undefined;
    const draining: Draining = {
      since,
      lastConnection: since,
      accepted: 0,
      closedAt: since,
      dropped: 0,
      closedIdle: 0,
      closeListener: () => {
        if (closing) return;
        closing = true;
        clearTimeout(timer);
        draining.closedAt = performance.now();
        // Closing a listening socket resets the connections the kernel has completed and the process has
        // not accepted yet. Closed from the check phase, right after a poll phase accepted all it could,
        // that window is microseconds rather than a whole event-loop turn. net.Server's close, not
        // http.Server's: the latter also closes idle keep-alive connections at once, under a request the
        // client may be writing at that moment.
        setImmediate(() =>
          setImmediate(() =>
            NetServer.prototype.close.call(server, () => {
              if (draining.accepted > 0) this.opts.log?.(`shutdown: served ${draining.accepted} connection(s) that arrived during the drain; the listener closed ${Math.round(draining.closedAt - since)} ms after the signal`);
              if (draining.dropped > 0) this.opts.log?.(`shutdown: dropped ${draining.dropped} connection(s) without a complete request after the ${SHUTDOWN_GRACE_MS} ms grace; closed ${draining.closedIdle} idle keep-alive connection(s)`);
              resolveDrained();
            }),
          ),
        );
      },
    };
    this.draining = draining;
    this.sweep();
    const wait = (): void => {
      const now = performance.now();
      const left = Math.min(since + drainDelayMs - now, draining.lastConnection + DRAIN_QUIET_MS - now);
      if (left <= 0) draining.closeListener();
      else timer = setTimeout(wait, left);
    };
    wait();
    return this.drained;
  }

  /** Forced shutdown: closes the listener at once (during a drain). */
  stopAccepting(): void {
    this.draining?.closeListener();
  }

  /** Forced shutdown: destroys every connection left. */
  destroyAll(): void {
    for (const c of [...this.conns.values()]) {
      this.forget(c);
      this.drop(c, 'shutdown');
    }
  }

  /** Stops the deadline checks (after the server has closed). */
  dispose(): void {
    clearInterval(this.sweeper);
  }

  private onConnection(socket: Socket): void {
    const key = keyOf(socket);
    const now = performance.now();
    if (this.draining) {
      this.draining.lastConnection = now;
      this.draining.accepted++;
    }
    const client = socket.remoteAddress ?? '';
    const c: Conn = { key, socket, client, openedAt: now, requests: 0, busy: false, receiving: false, idleSince: now, doomed: false };
    const { maxConnections, maxConnectionsPerClient } = this.opts;
    const fromClient = (this.perClient.get(client) ?? 0) + 1;
    if (maxConnectionsPerClient > 0 && fromClient > maxConnectionsPerClient) {
      this.drop(c, 'per_client');
      return;
    }
    if (this.conns.size >= maxConnections) {
      const oldest = this.fresh.values().next();
      if (oldest.done) {
        // Every open connection has completed a request: those are clients being served; refuse the newcomer.
        this.drop(c, 'limit');
        return;
      }
      this.forget(oldest.value);
      this.drop(oldest.value, 'limit');
    }
    this.conns.set(key, c);
    this.fresh.set(key, c);
    this.perClient.set(client, fromClient);
    this.opts.openGauge.set({}, this.conns.size);
    socket.once('close', () => {
      if (this.conns.get(key) === c) this.forget(c);
    });
  }

  private forget(c: Conn): void {
    this.conns.delete(c.key);
    this.fresh.delete(c.key);
    const n = (this.perClient.get(c.client) ?? 1) - 1;
    if (n <= 0) this.perClient.delete(c.client);
    else this.perClient.set(c.client, n);
    this.opts.openGauge.set({}, this.conns.size);
  }

  private drop(c: Conn, reason: DropReason): void {
    c.socket.destroy();
    this.opts.dropped.inc({ reason });
    if (reason !== 'limit' && reason !== 'per_client') return;
    // One line per 10 s at most: a flood must not flood the log too.
    this.droppedSinceLog++;
    const now = performance.now();
    if (now - this.lastLimitLog >= 10_000) {
      this.lastLimitLog = now;
      const cap = reason === 'limit' ? `--max-connections ${this.opts.maxConnections}` : `--max-connections-per-client ${this.opts.maxConnectionsPerClient}`;
      this.opts.log?.(`connection limit reached (${cap}): dropped ${this.droppedSinceLog} connection(s) that had not sent a request, oldest first; established clients and new requests keep being served`);
      this.droppedSinceLog = 0;
    }
  }

  private sweep(): void {
    const now = performance.now();
    const deadline = now - this.opts.headersTimeoutMs;
    for (const c of this.fresh.values()) {
      if (c.openedAt > deadline) break;
      this.forget(c);
      this.drop(c, 'headers_timeout');
    }
    // A sweep that runs late finds the event loop behind: bytes may have arrived that it has not read
    // yet, so nothing is judged stalled on its evidence.
    const late = now - this.lastSweep > 2 * SWEEP_MS;
    this.lastSweep = now;
    if (!this.draining) return;
    for (const c of [...this.conns.values()]) {
      // A request being answered keeps its connection; its answer carries `Connection: close`.
      if (c.busy && !c.receiving) continue;
      // The grace runs from the signal, or from when the connection last went idle (opened, or answered)
      // when that is later: a connection accepted during the drain gets the whole grace for its request.
      const stalled = now - Math.max(this.draining.since, c.idleSince) >= SHUTDOWN_GRACE_MS;
      // Two sweeps in a row: bytes that had arrived by the first are read (an I/O phase runs between
      // timers) before the second, so a request already on the wire is never cut.
      const previously = c.doomed;
      c.doomed = stalled && !late;
      if (!stalled || !previously) continue;
      this.forget(c);
      if (c.busy || c.requests === 0) {
        this.drop(c, 'shutdown');
        this.draining.dropped++;
      } else {
        c.socket.destroy(); // an idle keep-alive connection: closing it is no drop
        this.draining.closedIdle++;
      }
    }
  }
}

function keyOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}
