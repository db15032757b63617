#!/bin/bash
# matrix.sh BIN TAG: vocabulary mutation runs (4 combos x opensre/corpus/heldout) and -mutate 7 (opensre, corpus)
BIN=$1; TAG=$2; cd "$(dirname "$0")/../.."
i=0
for v in "labels,metrics,format=pagerduty,nonamespace" "labels=alt" "labels,metrics,format=grafana,nonamespace" "format=alertmanager"; do
  i=$((i+1))
  $BIN eval -suites opensre -vocab "$v" -baseline -out /tmp/$TAG-m$i-opensre -log.level error > /tmp/$TAG-m$i-opensre.log 2>&1
  for s in corpus heldout; do
    $BIN eval -suites corpus -corpus scenarios/$s -vocab "$v" -baseline -out /tmp/$TAG-m$i-$s -log.level error > /tmp/$TAG-m$i-$s.log 2>&1
  done
done
$BIN eval -suites opensre -mutate 7 -baseline -out /tmp/$TAG-mut-opensre -log.level error > /tmp/$TAG-mut-opensre.log 2>&1
$BIN eval -suites corpus -corpus scenarios/corpus -mutate 7 -baseline -out /tmp/$TAG-mut-corpus -log.level error > /tmp/$TAG-mut-corpus.log 2>&1
