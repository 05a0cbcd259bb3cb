// Registering a new consumer: the registry row that gives it the id its markers carry, inserted
// in the claiming transaction itself, arbitrated by the registry's unique name exactly as a
// marker is by the primary key. Two first claims of one new consumer wait for each other as two
// copies of a message do (a wait the deadlock detector sees); first claims of different
// consumers never wait. A rolled-back registration takes its row and its id with it, and the
// next registration takes that id again: ids are the lowest free ones, so no pattern of
// rollbacks uses them up.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "store/consumer.hpp"

// Inserts `consumer` (a validated name) into the registry in the current transaction; true and
// *registered when this transaction inserted it, false when another transaction has committed it
// (the caller then reads it). An error on a standby (25006), when every id is taken (54000), or
// on a Citus worker node, which the coordinator registers for (its id only: true).
bool insert_consumer(text* consumer, Consumer* registered);
