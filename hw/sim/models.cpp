// models.cpp - the library's one source of its own: the Verilated models
// are compiled in by verilate(); this file only anchors the library.
#include "buddy_sim.h"
