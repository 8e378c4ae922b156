/**
 * An error the server answers with an HTTP status and `{"error": "<message>"}`, as Triton does. Request
 * problems are 4xx and name what was wrong; a failure of the server itself is 5xx.
 */
import type { FailureReason } from './model_stats.js';

export class HttpError extends Error {
  readonly status: number;
  /** Extra response headers (e.g. `Allow` for 405). */
  readonly headers?: Record<string, string>;

  /**
   * For inference requests, why it failed as Triton's failure metric names it; default: `REJECTED` for
   * 503 (overload, shutting down), `OTHER` for anything else (a malformed request).
   */
  readonly reason?: FailureReason;

  constructor(status: number, message: string, headers?: Record<string, string>, reason?: FailureReason) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.headers = headers;
    this.reason = reason;
  }
}

export const badRequest = (message: string): HttpError => new HttpError(400, message);
export const notFound = (message: string): HttpError => new HttpError(404, message);
export const unavailable = (message: string): HttpError => new HttpError(503, message);
