// The page: <tp-app> in index.html is defined here; it reads the URL hash and runs the layer.
import './ui/shell/tp-app.ts';
