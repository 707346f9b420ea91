// A rank worker thread that ends itself as it loads, with exit code 3 (node-ranks-check.ts starts it as every rank).
process.exit(3);
