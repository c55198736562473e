/* Ethernet -> ARP | IPv4 -> UDP -> (to AGG_PORT) aggregation header -> K elements.
 * IPv4 with options or fragments is not looked into: it is ordinary traffic. */
#ifndef P4REDUCE_PARSER_P4
#define P4REDUCE_PARSER_P4

#include "headers.p4"

parser P4ReduceParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* version 4, IHL 5, MF clear, offset 0, UDP */
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.flags, hdr.ipv4.fragOffset,
                          hdr.ipv4.protocol) {
            (4w4, 4w5, 3w0 &&& 3w1, 13w0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            AGG_PORT: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        pkt.extract(hdr.agg);
        transition select(hdr.agg.flags) {
            4w0 &&& FLAG_NO_PAYLOAD: parse_data;
            default: accept;
        }
    }
    state parse_data {
        /* A frame too short for K elements ends here with PacketTooShort: hdr.data stays
         * invalid and admission drops the packet as malformed. */
        pkt.extract(hdr.data);
        transition accept;
    }
}

#endif
