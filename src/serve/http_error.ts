/**
 * An error the server answers with an HTTP status and `{"error": "<message>"}`, as Triton does. Request
 * problems are 4xx and name what was wrong; a failure of the server itself is 5xx.
 */
export class HttpError extends Error {
  readonly status: number;
  /** Extra response headers (e.g. `Allow` for 405). */
  readonly headers?: Record<string, string>;

  constructor(status: number, message: string, headers?: Record<string, string>) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.headers = headers;
  }
}

export const badRequest = (message: string): HttpError => new HttpError(400, message);
export const notFound = (message: string): HttpError => new HttpError(404, message);
export const unavailable = (message: string): HttpError => new HttpError(503, message);
