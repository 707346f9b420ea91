import type { GemmChoiceStore, StoredGemmChoices } from './gemm-cache.ts';

const dbName = 'tp-playground';
const storeName = 'gemm-choices';

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(dbName, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(storeName);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error(`IndexedDB: cannot open "${dbName}".`));
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error ?? new Error('IndexedDB: transaction failed.'));
  });
}

/**
 * GEMM tuning decisions in the origin's IndexedDB (pages and workers alike), so a page load
 * reuses what an earlier one measured on the same adapter and kernels. Where IndexedDB is missing
 * or refuses (private modes), load gives nothing and save does nothing: tuning just runs again.
 */
export function indexedDbGemmStore(): GemmChoiceStore {
  const available = typeof indexedDB !== 'undefined';
  return {
    async load(): Promise<StoredGemmChoices> {
      if (!available) return {};
      try {
        const db = await open();
        const tx = db.transaction(storeName, 'readonly');
        const os = tx.objectStore(storeName);
        const [keys, values] = await Promise.all(
          [os.getAllKeys(), os.getAll()].map(
            (req) =>
              new Promise<unknown[]>((resolve, reject) => {
                req.onsuccess = () => resolve(req.result as unknown[]);
                req.onerror = () => reject(req.error);
              }),
          ),
        );
        db.close();
        return Object.fromEntries(keys.map((k, i) => [String(k), values[i]])) as StoredGemmChoices;
      } catch {
        return {};
      }
    },
    async save(entries: StoredGemmChoices): Promise<void> {
      if (!available || !Object.keys(entries).length) return;
      try {
        const db = await open();
        const tx = db.transaction(storeName, 'readwrite');
        for (const [k, v] of Object.entries(entries)) tx.objectStore(storeName).put(v, k);
        await done(tx);
        db.close();
      } catch {
        // A store that refuses only costs a re-tune next time.
      }
    },
  };
}
