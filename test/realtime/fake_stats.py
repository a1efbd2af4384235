#!/usr/bin/env python3
"""Leaves a given stats JSON where DEFERO_STATS_FILE says, as a program run
under libdefero would, and exits without running exit handlers (so the
library's own JSON does not replace it): a fixture for the stats checker.

  fake_stats.py FILE
"""
import os
import shutil
import sys

shutil.copyfile(sys.argv[1], os.environ["DEFERO_STATS_FILE"])
sys.stdout.flush()
os._exit(0)
