// pi 1.6.0 (Node 22) started interactively in a real terminal (./terminal.suite.mjs).
import { terminalSuite } from './terminal.suite.mjs';

terminalSuite('1.6.0');
