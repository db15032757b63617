#!/bin/bash
# evbin.sh BIN TAG: eval every scenario set + heldout + corpus + opensre into /tmp/TAG-<set>
BIN=$1; TAG=$2; cd "$(dirname "$0")/../.."
SETS="blind $(for i in $(seq 2 33); do [ -d scenarios/blind$i ] && echo blind$i; done) heldout corpus"
for s in $SETS; do
  $BIN eval -suites corpus -corpus scenarios/$s -out /tmp/$TAG-$s -log.level error > /tmp/$TAG-$s.log 2>&1
done
$BIN eval -suites opensre -out /tmp/$TAG-opensre -log.level error > /tmp/$TAG-opensre.log 2>&1
