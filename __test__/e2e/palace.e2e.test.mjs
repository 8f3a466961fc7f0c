// The palace session (./palace.suite.mjs) on pi 0.74.0, Node 20 (Dotty's robot).
import { palaceSuite } from './palace.suite.mjs';

palaceSuite('0.74.0');
