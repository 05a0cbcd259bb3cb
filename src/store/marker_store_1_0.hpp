// The markers of a database still at the table layout of 1.0, inbox.messages (consumer,
// message_id, processed_at), which this library serves from its installation until ALTER
// EXTENSION inbox UPDATE, for the functions 1.0 declares: claim, apply and forget test the layout
// once per call (markers_still_at_1_0) and then take either the compact store's path or this
// one. Its markers carry no consumer id and no failed attempts are counted for them.
#pragma once

extern "C" {
#include "postgres.h"
}

// Whether the markers to change are still in the layout of 1.0. A database at 1.0 may be
// updated to 1.1 while this call waits for the update's lock: the lock that the change takes
// anyway is taken first, so that the update's invalidations arrive before the layout is chosen,
// and the call goes on with the new store.
bool markers_still_at_1_0();

// Inserts the marker as the store's owner, in an SPI connection of its own; true when it was
// new. Waits for an uncommitted copy.
bool insert_marker_1_0(text* consumer, text* message_id);

// Deletes the marker the same way; true when there was one.
bool delete_marker_1_0(text* consumer, text* message_id);
