// Recall (./recall.suite.mjs) on pi 1.6.0 on Node 22 (pi 1.x needs Node >= 22.19).
import { recallSuite } from './recall.suite.mjs';

recallSuite('1.6.0');
