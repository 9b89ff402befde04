#!/bin/sh
# One Trn3 Gen2 UltraServer as the 36 hosts it is: 36 daemons on
# model:trn3-gen2-ultraserver,node=0..35 with one seed, every one writing to
# a real Prometheus and a real VictoriaMetrics. fleet-remote-write.sh checks
# that the receivers hold its 144 devices and 1,152 physical cores (576
# logical at LNC 2), that each link's two sides agree across nodes tick by
# tick (every daemon's clock is held and driven to the same stamps), that
# every fleet dashboard query has data, and that a receiver's outage is
# replayed without gap or repeat.
FLEET_NODES=36 FLEET_BACKEND=model:trn3-gen2-ultraserver FLEET_ULTRASERVER=1 \
  exec sh "$(dirname "$0")/fleet-remote-write.sh"
