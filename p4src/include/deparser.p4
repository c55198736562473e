#ifndef P4REDUCE_DEPARSER_P4
#define P4REDUCE_DEPARSER_P4

#include "headers.p4"

control P4ReduceDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.agg);
        pkt.emit(hdr.data);
    }
}

#endif
