// register_reset: the program of register_control_plane.p4 (see
// register_reset.stf).
#include "register_control_plane.p4"
