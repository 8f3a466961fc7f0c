// Recall (./recall.suite.mjs) on pi 0.74.0 on Node 20.
import { recallSuite } from './recall.suite.mjs';

recallSuite('0.74.0');
