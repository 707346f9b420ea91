// Splits a Chrome-trace JSON document, fed as text chunks, into its top-level members and the
// elements of its `traceEvents` array, so that a trace of hundreds of MB is never one string.

/** What the scanner hands on: raw JSON text of one top-level member or one event. */
export interface ScanSink {
  /** A top-level member other than traceEvents (`json` is its value's text). */
  member(key: string, json: string): void;
  /** One element of traceEvents (or of a bare top-level array, the other Chrome-trace form). */
  event(json: string): void;
}

/** Limits on what one value may hold; longer values are skipped and counted. */
export interface ScanLimits {
  /** Characters of one event (default 1 MiB). */
  readonly maxEventChars: number;
  /** Characters of one top-level member other than traceEvents (default 16 MiB). */
  readonly maxMemberChars: number;
}

/** The document is not the JSON object (or array) of a Chrome trace; the message says where. */
export class ScanError extends Error {}

type Mode = 'start' | 'key' | 'colon' | 'value' | 'array' | 'done';

const WS = new Set([0x20, 0x09, 0x0a, 0x0d, 0xfeff]);

/**
 * A push scanner: `push(chunk)` for every piece of text in order, then `end()`. It tracks strings
 * (with escapes) and nesting only; the text of each value is checked by JSON.parse where it is used.
 */
export class TraceScanner {
  private buf = '';
  private pos = 0;
  private mode: Mode = 'start';
  private bareArray = false;
  private key = '';
  /** Start of the value being captured in `buf`, -1 when none; `skipping` while an over-long one is passed over. */
  private cap = -1;
  private skipping = false;
  private capDepth = 0;
  private inStr = false;
  private esc = false;
  private consumed = 0;
  /** True once a traceEvents array (or a bare top-level array) has begun. */
  eventsArray = false;
  /** Events and members passed over for their length. */
  skipped = { events: 0, members: [] as string[] };
  /** Characters read so far. */
  get chars(): number {
    return this.consumed + this.pos;
  }

  constructor(
    private readonly sink: ScanSink,
    private readonly limits: ScanLimits = { maxEventChars: 1 << 20, maxMemberChars: 1 << 24 },
  ) {}

  push(chunk: string): void {
    const keep = this.cap >= 0 ? this.cap : this.pos;
    this.consumed += keep;
    this.buf = this.buf.slice(keep) + chunk;
    this.pos -= keep;
    if (this.cap >= 0) this.cap = 0;
    this.scan();
  }

  end(): void {
    this.scan();
    if (this.mode === 'done') return;
    if (this.mode === 'start') throw new ScanError('the file is empty.');
    const where =
      this.mode === 'array' || this.key === 'traceEvents' ? 'inside traceEvents' : 'inside the top-level object';
    throw new ScanError(`the JSON ends ${where} after ${this.chars} characters: the file is truncated or not JSON.`);
  }

  private fail(what: string): never {
    const near = JSON.stringify(this.buf.slice(this.pos, this.pos + 24));
    throw new ScanError(`${what} at character ${this.chars} (near ${near}): not a Chrome-trace JSON document.`);
  }

  /** Advances a capture (string/escape/nesting) to the end of its value; true when the value ended at `pos`. */
  private captureTo(): boolean {
    const b = this.buf;
    let i = this.pos;
    for (; i < b.length; i++) {
      if (this.inStr) {
        i = this.stringEnd(i);
        if (i >= b.length) break;
        continue;
      }
      const c = b.charCodeAt(i);
      if (c === 0x22) this.inStr = true;
      else if (c === 0x7b || c === 0x5b) this.capDepth++;
      else if (c === 0x7d || c === 0x5d) {
        if (this.capDepth === 0) break;
        this.capDepth--;
      } else if (c === 0x2c && this.capDepth === 0) break;
    }
    this.pos = i;
    return i < b.length;
  }

  /**
   * Inside a string from `i`: the index of its closing quote (and the string is left), or
   * b.length when the buffer ends first (remembering a pending backslash). Jumps quote to quote.
   */
  private stringEnd(i: number): number {
    const b = this.buf;
    if (this.esc) {
      this.esc = false;
      i++;
    }
    for (let q = b.indexOf('"', i); q >= 0; q = b.indexOf('"', q + 1)) {
      let k = q - 1;
      while (k >= i && b.charCodeAt(k) === 0x5c) k--;
      if ((q - 1 - k) % 2 === 0) {
        this.inStr = false;
        return q;
      }
    }
    let k = b.length - 1;
    while (k >= i && b.charCodeAt(k) === 0x5c) k--;
    this.esc = (b.length - 1 - k) % 2 === 1;
    return b.length;
  }

  private startCapture(): void {
    this.cap = this.pos;
    this.skipping = false;
    this.capDepth = 0;
    this.inStr = false;
    this.esc = false;
  }

  /** The captured text (trimmed), or null when it was too long and skipped; ends the capture. */
  private takeCapture(limit: number): string | null {
    const text = this.skipping ? null : this.buf.slice(this.cap, this.pos).trim();
    this.cap = -1;
    this.skipping = false;
    return text !== null && text.length <= limit ? text : null;
  }

  private scan(): void {
    const b = this.buf;
    while (this.pos < b.length) {
      if (this.cap >= 0) {
        const limit = this.mode === 'array' ? this.limits.maxEventChars : this.limits.maxMemberChars;
        const done = this.captureTo();
        if (!done) {
          if (this.pos - this.cap > limit) {
            // Too long to keep: drop the text, keep tracking nesting until the value ends.
            this.skipping = true;
            this.cap = this.pos;
          }
          return;
        }
        const text = this.takeCapture(limit);
        if (this.mode === 'array') {
          if (text === null) this.skipped.events++;
          else if (text !== '') this.sink.event(text);
        } else {
          if (text === null) this.skipped.members.push(this.key);
          else this.sink.member(this.key, text);
          this.mode = 'key';
        }
        continue;
      }
      const c = b.charCodeAt(this.pos);
      if (WS.has(c)) {
        this.pos++;
        continue;
      }
      switch (this.mode) {
        case 'start':
          if (c === 0x7b) this.mode = 'key';
          else if (c === 0x5b) {
            this.mode = 'array';
            this.bareArray = true;
            this.eventsArray = true;
          } else this.fail("the document does not start with '{' or '['");
          this.pos++;
          break;
        case 'key': {
          if (c === 0x2c) {
            this.pos++;
            break;
          }
          if (c === 0x7d) {
            this.mode = 'done';
            this.pos++;
            break;
          }
          if (c !== 0x22) this.fail('expected a member name');
          const close = this.closingQuote(this.pos + 1);
          if (close < 0) return; // the name continues in the next chunk
          try {
            this.key = JSON.parse(b.slice(this.pos, close + 1)) as string;
          } catch {
            this.fail('a malformed member name');
          }
          this.pos = close + 1;
          this.mode = 'colon';
          break;
        }
        case 'colon':
          if (c !== 0x3a) this.fail(`expected ':' after "${this.key}"`);
          this.pos++;
          this.mode = 'value';
          break;
        case 'value':
          if (this.key === 'traceEvents' && c === 0x5b) {
            this.mode = 'array';
            this.eventsArray = true;
            this.pos++;
          } else this.startCapture();
          break;
        case 'array':
          if (c === 0x2c) this.pos++;
          else if (c === 0x5d) {
            this.pos++;
            this.mode = this.bareArray ? 'done' : 'key';
          } else this.startCapture();
          break;
        case 'done':
          this.fail('text after the end of the document');
      }
    }
  }

  /** Index of the quote that closes a string starting at `from`, or -1 when the buffer ends first. */
  private closingQuote(from: number): number {
    const b = this.buf;
    for (let i = from; i < b.length; i++) {
      const c = b.charCodeAt(i);
      if (c === 0x5c) i++;
      else if (c === 0x22) return i;
    }
    return -1;
  }
}
