import type { CollectiveCall } from './call.ts';
import type { P2PCall } from './p2p.ts';

/**
 * What ranks post to each other over MessagePort: a call's fingerprint, one ring step's chunk, or
 * a point-to-point message (its seq counts the messages from the sender to this receiver).
 */
export type PortMessage =
  | { readonly kind: 'fp'; readonly seq: number; readonly call: CollectiveCall }
  | { readonly kind: 'data'; readonly seq: number; readonly step: number; readonly data: Float32Array }
  | { readonly kind: 'p2p'; readonly seq: number; readonly call: P2PCall; readonly data: Float32Array };

/** Key under which a message is matched with its receiver. */
export function messageKey(m: { kind: string; seq: number; step?: number }): string {
  return `${m.kind}:${m.seq}:${m.step ?? 0}`;
}

interface Waiter {
  resolve: (m: PortMessage) => void;
  reject: (e: Error) => void;
}

/** Matches messages from one peer's port with receivers by key, in either arrival order. */
export class Mailbox {
  private queued = new Map<string, PortMessage>();
  private waiting = new Map<string, Waiter>();
  private aborted: Error | undefined;

  constructor(port: MessagePort) {
    port.onmessage = (ev: MessageEvent<PortMessage>) => this.deliver(ev.data);
  }

  private deliver(m: PortMessage): void {
    const key = messageKey(m);
    const w = this.waiting.get(key);
    if (w) {
      this.waiting.delete(key);
      w.resolve(m);
    } else this.queued.set(key, m);
  }

  /** Resolves with the message under `key`; rejects with `onTimeout()` after `ms`, or on abort. */
  receive(key: string, ms: number, onTimeout: () => Error): Promise<PortMessage> {
    if (this.aborted) return Promise.reject(this.aborted);
    const m = this.queued.get(key);
    if (m) {
      this.queued.delete(key);
      return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(key);
        reject(onTimeout());
      }, ms);
      this.waiting.set(key, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
    });
  }

  /** Fails every pending and future receive with `e`. */
  abort(e: Error): void {
    this.aborted ??= e;
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }
}
