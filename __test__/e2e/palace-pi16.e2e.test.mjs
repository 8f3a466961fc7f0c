// The palace session (./palace.suite.mjs) on pi 1.6.0, Node 22 (pi 1.x needs Node >= 22.19).
import { palaceSuite } from './palace.suite.mjs';

palaceSuite('1.6.0');
