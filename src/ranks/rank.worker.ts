import { commPrograms } from './comm-programs.ts';
import { serveRank } from './serve.ts';

serveRank(commPrograms);
