// A rank worker thread whose module fails as it loads (node-ranks-check.ts starts it as every rank).
throw new Error('this rank module fails on purpose as it loads');
