/*
 * nic.h - what the nic sensor (nic.c) offers beside its module table: its
 * sock_diag parser, for the fuzz target and tests.  Internal to the
 * library's modules.
 */
#ifndef PA_NIC_H
#define PA_NIC_H

#include <stddef.h>
#include <stdint.h>

/* Parses one recv() of a sock_diag dump (inet_diag messages of sequence
 * seq, buf aligned as a recv() buffer) the way the sensor does, and
 * counts the TCP sockets with byte counts in *nsockets.  1 end of dump, 0
 * more to come, else the kernel's error or -ENOMEM. */
int pa__nic_diag_parse(const void *buf, size_t len, uint32_t seq, size_t *nsockets);

#endif
