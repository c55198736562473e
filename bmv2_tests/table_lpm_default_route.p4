// table_lpm_default_route: the program of table_lpm.p4 with a /0 entry
// (see table_lpm_default_route.stf).
#include "table_lpm.p4"
