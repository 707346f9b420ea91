/**
 * A Map that keeps only its `capacity` most recently used entries: `get` and `set` make a key the
 * newest, and a `set` past capacity drops the oldest. Map iterates in insertion order, so the
 * oldest key is always first.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`RecentMap: capacity must be a positive integer, got ${capacity}.`);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    if (!this.entries.has(key)) return undefined;
    const value = this.entries.get(key) as V;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: K, value: V): this {
    this.entries.delete(key);
    this.entries.set(key, value);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(oldest);
    }
    return this;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Keys, oldest first. */
  keys(): IterableIterator<K> {
    return this.entries.keys();
  }
}
