// table_default_action_set: the program of table_default_action.p4, with its
// defaults replaced by STF setdefault (see table_default_action_set.stf).
#include "table_default_action.p4"
