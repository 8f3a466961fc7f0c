// The tool budget and the palace's footer status (./tools-budget.suite.mjs) on pi 1.6.0 on Node 22.
import { toolsBudgetSuite } from './tools-budget.suite.mjs';

toolsBudgetSuite('1.6.0');
