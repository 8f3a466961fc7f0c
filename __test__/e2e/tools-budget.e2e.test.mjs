// The tool budget and the palace's footer status (./tools-budget.suite.mjs) on pi 0.74.0 (Node 20).
import { toolsBudgetSuite } from './tools-budget.suite.mjs';

toolsBudgetSuite('0.74.0');
