// pi 0.74.0 (Node 20) started interactively in a real terminal (./terminal.suite.mjs).
import { terminalSuite } from './terminal.suite.mjs';

terminalSuite('0.74.0');
